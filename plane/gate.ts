/**
 * Admission for ingest batches. Up to `active` run at once (the database pool
 * is the real limit); up to `queued` more wait their turn, first come first
 * served, for at most `waitMs`. Beyond that the plane refuses (429 with
 * Retry-After) instead of holding ever more requests: a short burst of writers
 * is absorbed, sustained overload is shed and retried by the clients.
 */
export class AdmissionGate {
  private running = 0;
  private readonly waiting: { grant(): void }[] = [];

  constructor(
    private readonly active: number,
    private readonly queued: number,
    private readonly waitMs: number,
    /** Hears how many batches wait for a slot, whenever that changes (the operator's gauge). */
    private readonly onWaiting: (n: number) => void = () => {},
  ) {}

  /** A release function once admitted, or null when refused (queue full, or waited `waitMs`). */
  enter(): Promise<(() => void) | null> {
    if (this.running < this.active) {
      this.running++;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.queued) return Promise.resolve(null);
    return new Promise((resolve) => {
      const waiter = {
        grant: () => {
          clearTimeout(timer);
          resolve(this.releaser());
        },
      };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        this.onWaiting(this.waiting.length);
        resolve(null);
      }, this.waitMs);
      this.waiting.push(waiter);
      this.onWaiting(this.waiting.length);
    });
  }

  /** Hands the slot straight to the next waiter, if any; idempotent. */
  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) {
        this.onWaiting(this.waiting.length);
        next.grant();
      } else this.running--;
    };
  }
}
