// The layering of the service, checked by `npm run lint` (dependency-cruiser), top to bottom:
//   src/cli/                        the command line: clients only
//   src/server/, controllers/       the composition roots: start-up, roles, app assembly, wiring
//   domains                         platform, files, edge, publish, forms, sqlite, mail, ratelimit, console
//                                   and beside them mcp, which uses no domain (its tools call the API)
//   framework and infrastructure    http, store, blob, kube, observability, config, errors, passwords, version
// Each layer imports only layers below it, no import runs in a circle, and a folder is imported by
// others through its index.ts only (its public face).
//
// The console (console/src, a browser app built apart from the service), top to bottom:
//   main.tsx                        the app: the shell, sign-in state, the route table put to use
//   routes.tsx                      the route table: which screen answers which path
//   screens/                        the screens and their helpers
//   ui/, session.tsx                the kit of components, the signed-in account's context
//   router.tsx                      navigation: history, <Link>, the current path
//   links.ts, api.ts                the console's paths and href builders, the API client
// Screens link through links.ts, never through the route table (which imports them all).
const DOMAINS = '(platform|files|edge|publish|forms|sqlite|mail|ratelimit|console|mcp)';
const FRAMEWORK = '(http|store|blob|kube|observability|config|errors|passwords)';

/** The console's layers, top to bottom: [name, the files it holds]. */
const CONSOLE_LAYERS = [
  ['main', '^console/src/main\\.tsx$'],
  ['routes', '^console/src/routes\\.tsx$'],
  ['screens', '^console/src/screens/'],
  ['kit', '^console/src/(ui/|session\\.tsx$)'],
  ['router', '^console/src/router\\.tsx$'],
  ['floor', '^console/src/(links|api)\\.ts$'],
];

/** Each console layer imports only the layers below it; the floor imports no console module. */
function consoleRules() {
  const above = (i) => CONSOLE_LAYERS.slice(0, i).map(([, path]) => path);
  const layered = CONSOLE_LAYERS.slice(1, -1).map(([name, path], at) => ({
    name: `console-${name}-import${name.endsWith('s') ? '' : 's'}-nothing-above`,
    severity: 'error',
    comment: `The console's ${name} import only the layers below them (see the top of this file).`,
    from: { path },
    to: { path: above(at + 1) },
  }));
  const [floorName, floor] = CONSOLE_LAYERS[CONSOLE_LAYERS.length - 1];
  return [
    ...layered,
    {
      name: `console-${floorName}-imports-no-console-module`,
      severity: 'error',
      comment: 'links.ts (paths only) and api.ts (the API client) are the floor: every layer may use them.',
      from: { path: floor },
      to: { path: '^console/src/' },
    },
    {
      name: 'console-files-have-a-layer',
      severity: 'error',
      comment:
        'Each console module is in a layer of CONSOLE_LAYERS, so that the rules above reach it (styles aside).',
      from: { path: '^console/src/' },
      to: { path: '^console/src/', pathNot: [...CONSOLE_LAYERS.map(([, path]) => path), '\\.css$'] },
    },
    {
      name: 'console-and-service-are-apart',
      severity: 'error',
      comment:
        'The console is a browser bundle built apart: it imports no service code, and the service none of it ' +
        '(a rule both share is mirrored and held to its original by a test, as test/unit/console/deploy-rules does).',
      from: { path: '^console/' },
      to: { path: '^(src|controllers)/' },
    },
    {
      name: 'service-and-console-are-apart',
      severity: 'error',
      comment: 'The service serves the console built (dist/console), never its sources.',
      from: { path: '^(src|controllers)/' },
      to: { path: '^console/' },
    },
  ];
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules that import each other cannot be read, loaded or changed one at a time.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'cli-is-the-top',
      severity: 'error',
      comment: 'Only the command line imports the command line; the service never runs back up into it.',
      from: { pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'composition-root-is-above-the-domains',
      severity: 'error',
      comment: 'The composition root assembles domains; nothing it assembles may reach back up into it.',
      from: { path: `^(src/${DOMAINS}|src/${FRAMEWORK}|controllers)/` },
      to: { path: '^src/server/' },
    },
    {
      name: 'controllers-are-above-the-domains',
      severity: 'error',
      comment: 'Controllers use the domains; the service never imports a controller except to start it.',
      from: { path: `^src/(${DOMAINS}|${FRAMEWORK})/` },
      to: { path: '^controllers/' },
    },
    {
      name: 'the-framework-knows-no-domain',
      severity: 'error',
      comment:
        'http, store, blob, kube, observability, config, errors and passwords serve every domain and name none.',
      from: { path: `^src/${FRAMEWORK}/` },
      to: { path: `^src/${DOMAINS}/` },
    },
    {
      name: 'mcp-goes-through-the-api',
      severity: 'error',
      comment:
        'The MCP tools call the public API in-process (src/mcp/api.ts), so validation, limits and errors are ' +
        "HTTP's own: src/mcp imports no domain, and no domain imports it (the composition root wires it).",
      from: { path: '^src/mcp/' },
      to: { path: '^src/(platform|files|edge|publish|forms|sqlite|mail|ratelimit)/' },
    },
    {
      name: 'no-domain-uses-mcp',
      severity: 'error',
      comment: 'MCP is a client of the API: nothing below the composition root depends on it.',
      from: { path: '^src/', pathNot: '^src/(mcp|server)/' },
      to: { path: '^src/mcp/' },
    },
    {
      name: 'through-the-face',
      severity: 'error',
      comment:
        "Another folder of src/ is used through its index.ts only, never its internals (a domain's " +
        "tables.ts may name another's table for a foreign key; the OpenTelemetry SDK's start-up is a " +
        'second face, loaded on demand so that the SDK stays out of every other load path; the files ' +
        "domain's client.ts is a second face for the CLI, leaf modules only, so that a deploy loads no server).",
      from: { path: '^src/([^/]+)/', pathNot: '^src/[^/]+/tables\\.ts$' },
      to: {
        path: '^src/[^/]+/',
        pathNot: [
          '^src/$1/',
          '^src/[^/]+/index\\.ts$',
          '^src/observability/otel\\.ts$',
          '^src/files/client\\.ts$',
        ],
      },
    },
    {
      name: 'controllers-use-the-faces',
      severity: 'error',
      comment: 'Controllers use src/ folders through their index.ts only.',
      from: { path: '^controllers/' },
      to: { path: '^src/[^/]+/', pathNot: '^src/[^/]+/index\\.ts$' },
    },
    ...consoleRules(),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules|test|bench)/|\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js'] },
  },
};
