/**
 * `ai` / `@ai-sdk/provider` are optional peers: the root entry must load
 * without them, and waymark/ai-sdk itself needs them only for types.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const IMPORT = /^\s*(import|export)\s+(type\s+)?(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;

/** Every module the file loads at run time (type-only imports and exports skipped), transitively. */
function runtimeGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const [, , typeOnly, spec] = m;
      if (typeOnly) continue;
      if (m[0].trimStart().startsWith('export') && /export\s+type\s*\{/.test(m[0])) continue;
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      else packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
    }
  };
  visit(join(ROOT, entry));
  return { files, packages };
}

describe('the AI SDK is an optional peer', () => {
  it('the root entry loads no file of waymark/ai-sdk and no AI SDK package', () => {
    const g = runtimeGraph('client/index.ts');
    expect(g.files.size).toBeGreaterThan(10);
    expect([...g.files].map((f) => relative(ROOT, f)).filter((f) => f.startsWith('client/ai-sdk'))).toEqual([]);
    expect([...g.packages].filter((p) => p === 'ai' || p.startsWith('@ai-sdk'))).toEqual([]);
  });

  it('the package exports waymark/ai-sdk (built dist, by package name)', async () => {
    const mod = (await import('waymark/ai-sdk')) as { fromAISDK?: unknown; AISDKModel?: unknown };
    expect(typeof mod.fromAISDK).toBe('function');
    expect(typeof mod.AISDKModel).toBe('function');
  });

  it('waymark/ai-sdk imports only types from @ai-sdk/provider', () => {
    const g = runtimeGraph('client/ai-sdk/index.ts');
    expect([...g.packages].filter((p) => p === 'ai' || p.startsWith('@ai-sdk'))).toEqual([]);
    expect(readFileSync(join(ROOT, 'client/ai-sdk/index.ts'), 'utf8')).toMatch(
      /import type \{[^}]*LanguageModelV3[^}]*\} from '@ai-sdk\/provider'/,
    );
  });
});
