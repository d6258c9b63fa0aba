// The layering of the service, checked by `npm run lint` (dependency-cruiser), top to bottom:
//   src/cli/                        the command line: clients only
//   src/server/, controllers/       the composition roots: start-up, roles, app assembly, wiring
//   domains                         platform, files, edge, publish, forms, sqlite, mail, ratelimit
//   framework and infrastructure    http, store, blob, kube, observability, config, errors, version
// Each layer imports only layers below it, and no import runs in a circle. (Which file of another
// domain may be imported, its index.ts only, is eslint's rule: see eslint.config.js.)
const DOMAINS = '(platform|files|edge|publish|forms|sqlite|mail|ratelimit)';
const FRAMEWORK = '(http|store|blob|kube|observability|config|errors)';

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
      comment: 'http, store, blob, kube, observability, config and errors serve every domain and name none.',
      from: { path: `^src/${FRAMEWORK}/` },
      to: { path: `^src/${DOMAINS}/` },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules|test|bench)/|\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
