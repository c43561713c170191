import { runPlaneSuite } from './suite.js';

runPlaneSuite('pglite', () => 'pglite');
