// TypeDoc's configuration for `npm run docs`: the API reference of the
// package's entry points (package.json `exports`), written to docs/api/.
// Paths are relative to this folder (build.sh runs TypeDoc here). Any warning fails the build.

/** @type {Partial<import('typedoc').TypeDocOptions>} */
export default {
  name: 'waymark',
  tsconfig: './tsconfig.json',
  entryPoints: [
    '../../client/index.ts',
    // waymark/sqlite and waymark/postgres: documented from checkpointer.ts,
    // which holds the `@module` comment and exports the same names as the
    // entry (waymark/postgres's index.ts re-exports the store as a constant,
    // loaded after the optional peer is checked, which TypeDoc would show as a
    // bare value)
    '../../client/sqlite/checkpointer.ts',
    '../../client/postgres/checkpointer.ts',
    '../../shared/index.ts',
    '../../plane/index.ts',
    '../../client/ai-sdk/index.ts',
    '../../client/langgraph/index.ts',
    '../../client/testing/index.ts',
  ],
  out: '../../docs/api',
  readme: 'none',
  excludePrivate: true,
  excludeProtected: true,
  excludeInternal: true,
  // the source links would need a git remote; the reference stands without them
  disableSources: true,
  // types are checked by the root's tsc (TypeScript 7); TypeDoc's TypeScript 5.9 only reads the sources
  skipErrorChecking: true,

  treatWarningsAsErrors: true,
  validation: { notExported: true, invalidLink: true, notDocumented: true },
  // every exported function, class, method, constant, interface and type; options types and each
  // of their options come from the plugin (requiredToBeDocumented goes by kind,
  // and all properties of all types is more than this reference asks)
  requiredToBeDocumented: ['Function', 'Class', 'Method', 'Variable', 'Interface', 'TypeAlias', 'Enum'],
  plugin: ['./require-option-docs.mjs'],
  // types named in the source, not exported: the replica's low-level plane calls, and a run's internal handles
  intentionallyNotExported: [
    'PlaneLease',
    'PlanePing',
    'PlaneTakeover',
    'Acquisition',
    'LeaseAsk',
    'RunLease',
    'ToolScope',
  ],
  // members of a type written inline in plane/index.ts's facade, which has no place for a comment
  intentionallyNotDocumented: [
    'waymark/plane.UnknownProject.__type',
    'waymark/plane.createPlaneApp.__type.__type.app.__type.fetch',
  ],
  // a comment WaymarkSaver inherits from LangGraph's BaseCheckpointSaver links to a type of that package
  externalSymbolLinkMappings: {
    '@langchain/langgraph-checkpoint': {
      DeltaChannelHistory: 'https://www.npmjs.com/package/@langchain/langgraph-checkpoint',
    },
  },
};
