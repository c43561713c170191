/**
 * The order vitest starts test files in: its own (files that failed last
 * time first, then the longest by its timing cache, else the largest), with
 * the files of test/tiers.ts START_FIRST moved ahead of all others, in that
 * list's order, so the longest files never start last.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { START_FIRST } from './tiers.js';

export class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = START_FIRST.indexOf(relative(spec.project.config.root, spec.moduleId).split('\\').join('/'));
      return at < 0 ? START_FIRST.length : at;
    };
    // a stable sort: the others keep vitest's order
    return sorted
      .map((spec, i) => ({ spec, i, r: rank(spec) }))
      .sort((a, b) => a.r - b.r || a.i - b.i)
      .map((x) => x.spec);
  }
}
