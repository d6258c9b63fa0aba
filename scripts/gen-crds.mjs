// Writes the CustomResourceDefinitions generated from src/kube/resources.ts (via the build in
// dist/) into crds/ and the chart's crds/. test/unit/crds.test.ts fails when they are stale.
/* global console -- a Node script; the ESLint config declares no globals for .mjs */
import { mkdirSync, writeFileSync } from 'node:fs';
import { crdFiles } from '../dist/src/kube/crds.js';

for (const dir of ['crds', 'charts/hostplane/crds']) {
  mkdirSync(dir, { recursive: true });
  for (const { file, yaml } of crdFiles()) writeFileSync(`${dir}/${file}`, yaml);
}
console.log(`wrote ${crdFiles().length} CRDs into crds/ and charts/hostplane/crds/`);
