import { createHash } from 'node:crypto';

/**
 * The inspector's stylesheet, written into each page's head: a page paints
 * without waiting for a second request. The Content-Security-Policy allows
 * this one stylesheet by its hash (STYLE_SOURCE) and no other inline style.
 */
export const STYLE = `
:root { color-scheme:light dark; --fg:#1b1f24; --muted:#59636e; --line:#d1d9e0; --bg:#fff; --soft:#f6f8fa; --field:#fff; --accent:#0550ae; --on-accent:#fff; --focus:#0969da66; --ok:#1a7f37; --warn:#9a6700; --bad:#cf222e; --pause:#8250df; }
@media (prefers-color-scheme: dark) {
  :root { --fg:#e6edf3; --muted:#9198a1; --line:#3d444d; --bg:#0d1117; --soft:#151b23; --field:#0d1117; --accent:#4493f8; --on-accent:#0d1117; --focus:#4493f899; --ok:#3fb950; --warn:#d29922; --bad:#f85149; --pause:#ab7df8; }
}
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; flex-wrap:wrap; gap:.5rem 1.5rem; align-items:center; padding:.6rem 1rem; border-bottom:1px solid var(--line); background:var(--soft); }
header .brand { font-weight:700; }
header nav { display:flex; flex-wrap:wrap; gap:1rem; }
header nav a[aria-current=page] { color:var(--fg); font-weight:600; text-decoration-thickness:2px; text-underline-offset:.3em; }
.count { display:inline-block; min-width:1.4em; padding:0 .35rem; border-radius:1rem; font-size:12px; font-weight:600; text-align:center; background:var(--pause); color:var(--bg); }
footer { max-width:1200px; margin:1.5rem auto 1rem; padding:0 1rem; font-size:12px; color:var(--muted); }
footer summary { cursor:pointer; } footer dl.keys { display:grid; grid-template-columns:max-content 1fr; gap:.2rem .8rem; margin:.4rem 0; } footer dd { margin:0; }
kbd { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:11.5px; padding:0 .3rem; border:1px solid var(--line); border-radius:4px; background:var(--soft); color:var(--fg); }
.views { display:flex; flex-wrap:wrap; gap:.3rem 1rem; align-items:baseline; margin:.25rem 0 .5rem; }
.views a[aria-current=page] { color:var(--fg); font-weight:600; }
.writer .mono { white-space:nowrap; }
header form { margin-left:auto; }
main { padding:1rem; max-width:1200px; margin:0 auto; }
a { color:var(--accent); }
a:focus, button:focus, input:focus, select:focus { outline:3px solid var(--focus); outline-offset:2px; }
h1 { font-size:1.3rem; margin:.2rem 0 1rem; word-break:break-all; }
h2 { font-size:1.05rem; margin:1.5rem 0 .5rem; }
.table-wrap { overflow-x:auto; border:1px solid var(--line); border-radius:6px; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:.4rem .6rem; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:var(--soft); font-weight:600; white-space:nowrap; }
td.mono, .mono { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12.5px; overflow-wrap:break-word; }
.badge { display:inline-block; padding:0 .45rem; border-radius:1rem; font-size:12px; font-weight:600; border:1px solid currentColor; white-space:nowrap; }
.s-completed, .s-done { color:var(--ok); } .s-failed { color:var(--bad); } .s-cancelled { color:var(--muted); } .s-in-progress { color:var(--warn); }
.s-stale { color:var(--bad); } .s-stopped { color:var(--bad); } .s-resumed { color:var(--ok); } .s-decided { color:var(--pause); }
.why { font-size:12px; margin-top:.2rem; max-width:28rem; overflow-wrap:anywhere; } q.reason { white-space:pre-wrap; overflow-wrap:anywhere; } .s-paused, .s-interrupted { color:var(--pause); } .s-running { color:var(--warn); }
form.filters { display:flex; flex-wrap:wrap; gap:.5rem; align-items:end; margin-bottom:1rem; }
label { display:flex; flex-direction:column; font-size:12px; color:var(--muted); gap:.15rem; }
label.check { flex-direction:row; align-items:center; gap:.35rem; align-self:center; font-size:13px; color:var(--fg); } label.check input { margin:0; }
input, select, button { font:inherit; padding:.3rem .5rem; border:1px solid var(--line); border-radius:6px; background:var(--field); color:var(--fg); }
button { background:var(--accent); color:var(--on-accent); border-color:var(--accent); cursor:pointer; }
button.link { background:none; color:var(--accent); border:none; padding:0; text-decoration:underline; }
.pager { display:flex; flex-wrap:wrap; gap:.25rem 1rem; margin-top:.75rem; } .pager a { white-space:nowrap; }
ol.timeline { list-style:none; margin:0; padding:0 0 0 1.1rem; border-left:2px solid var(--line); }
ol.timeline li { position:relative; padding:.35rem 0 .35rem .6rem; }
ol.timeline li::before { content:""; position:absolute; left:-1.55rem; top:.75rem; width:.7rem; height:.7rem; border-radius:50%; background:var(--line); border:2px solid var(--bg); }
ol.timeline li.st-completed::before, ol.timeline li.st-done::before { background:var(--ok); } ol.timeline li.st-in-progress::before { background:var(--warn); } ol.timeline li.st-interrupted::before { background:var(--pause); } ol.timeline li.st-failed::before, ol.timeline li.st-stopped::before, ol.timeline li.st-stale::before { background:var(--bad); } ol.timeline li.st-cancelled::before { background:var(--muted); }
.row-head { display:flex; flex-wrap:wrap; gap:.3rem .8rem; align-items:baseline; }
.row-meta { color:var(--muted); font-size:12px; display:flex; flex-wrap:wrap; gap:.2rem .8rem; }
pre { background:var(--soft); border:1px solid var(--line); border-radius:6px; padding:.6rem; overflow:auto; max-height:24rem; white-space:pre-wrap; word-break:break-word; font-size:12.5px; }
.card { border:1px solid var(--line); border-radius:6px; padding:.75rem; margin:.5rem 0; }
.muted { color:var(--muted); }
.added { border-left:3px solid var(--ok); padding-left:.5rem; } .removed { border-left:3px solid var(--bad); padding-left:.5rem; }
.grid2 { display:grid; grid-template-columns:repeat(auto-fit,minmax(280px,1fr)); gap:1rem; }
.error { color:var(--bad); }
.login { max-width:420px; margin:10vh auto; }
.login form { display:flex; flex-direction:column; gap:.75rem; }
ol.conversation { list-style:none; margin:.5rem 0; padding:0; display:flex; flex-direction:column; gap:.5rem; }
.msg { border:1px solid var(--line); border-radius:6px; padding:.5rem .6rem; }
.msg-role { font-size:12px; font-weight:600; text-transform:uppercase; letter-spacing:.03em; color:var(--muted); margin-bottom:.25rem; }
.msg-user { border-left:3px solid var(--accent); } .msg-assistant { border-left:3px solid var(--ok); } .msg-tool { border-left:3px solid var(--warn); background:var(--soft); } .msg-system { border-left:3px solid var(--muted); }
.msg pre { margin:.25rem 0; } .msg-text { background:none; border:none; padding:0; font:inherit; white-space:pre-wrap; }
.tool-call { margin-top:.25rem; } details.raw summary { font-size:12px; color:var(--muted); cursor:pointer; }
.fork { margin:.25rem 0; }
.timeline-tools { display:flex; flex-wrap:wrap; gap:0 1.5rem; align-items:end; } .timeline-tools form.filters { margin-bottom:.5rem; }
details.turn > summary { cursor:pointer; padding:.15rem 0; } details.turn > ol.timeline { margin:.2rem 0 .4rem .3rem; }
ol.timeline li:target { background:#fff8c5; border-radius:6px; } ol.timeline li.gap::before { background:var(--bad); }
[id^="seq-"] { scroll-margin-top:.5rem; }
details.result > summary, details.effect-key > summary { cursor:pointer; overflow-wrap:anywhere; } details.effect-key code { display:block; margin-top:.25rem; overflow-wrap:anywhere; font-size:12.5px; }
.live { margin:.25rem 0 .75rem; font-size:12px; }
ol.timeline li.depth-1 { margin-left:1.2rem; } ol.timeline li.depth-2 { margin-left:2.4rem; } ol.timeline li.depth-3, ol.timeline li.depth-4, ol.timeline li.depth-5, ol.timeline li.depth-6 { margin-left:3.6rem; }
ol.inbox { list-style:none; margin:0; padding:0; }
ol.inbox > li { margin:.5rem 0; }
.decision { border-left:3px solid var(--pause); } .decision .comment { margin:.35rem 0; white-space:pre-wrap; word-break:break-word; }
.s-pending, .s-claimed { color:var(--pause); } .s-applied { color:var(--ok); } .s-superseded { color:var(--muted); }
form.decide { display:flex; flex-direction:column; gap:.5rem; max-width:40rem; margin:.5rem 0; }
form.decide .buttons { display:flex; gap:.5rem; flex-wrap:wrap; }
form.bulk .buttons { display:flex; gap:.5rem; flex-wrap:wrap; margin:.35rem 0; } form.bulk > label { display:block; max-width:40rem; margin:.5rem 0; } ol.inbox input[type=checkbox] { width:1.2rem; height:1.2rem; margin:0; }
textarea { font:inherit; padding:.3rem .5rem; border:1px solid var(--line); border-radius:6px; width:100%; color:var(--fg); background:var(--field); }
textarea:focus { outline:3px solid var(--focus); outline-offset:2px; }
button.decline { background:var(--field); color:var(--bad); border-color:var(--bad); }
a.button { display:inline-block; padding:.3rem .5rem; border:1px solid var(--accent); border-radius:6px; text-decoration:none; white-space:nowrap; } a.button.decline { color:var(--bad); border-color:var(--bad); }
@media (max-width: 640px) { main { padding:.6rem; } th, td { padding:.3rem .4rem; } .wide-only { display:none; } ol.timeline li[class*="depth-"] { margin-left:.6rem; } }
@media (max-width: 640px) {
  .table-wrap table, .table-wrap tbody, .table-wrap tr, .table-wrap td { display:block; }
  .table-wrap thead { position:absolute; width:1px; height:1px; overflow:hidden; clip-path:inset(50%); }
  .table-wrap tr { border-bottom:1px solid var(--line); padding:.25rem 0; }
  .table-wrap tr:last-child { border-bottom:none; }
  .table-wrap td { border:none; padding:.15rem .5rem; }
  .table-wrap td[data-label] { position:relative; padding-left:7.5rem; min-height:1.6rem; }
  .table-wrap td[data-label]::before { content:attr(data-label); position:absolute; left:.5rem; width:6.6rem; font:600 12px/1.8 system-ui,sans-serif; color:var(--muted); }
  .table-wrap td.wide-only { display:none; }
}
`;

/** The CSP source that allows STYLE and nothing else inline. */
export const STYLE_SOURCE = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;
