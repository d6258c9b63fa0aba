// Writes the CustomResourceDefinitions generated from src/kube/resources.ts (via the build in
// dist/) into crds/ and into the chart's files/crds/, which templates/crds.yaml renders (one source
// for both). test/unit/kube/crds.test.ts fails when either copy is stale.
/* global console -- a Node script; the ESLint config declares no globals for .mjs */
import { mkdirSync, writeFileSync } from 'node:fs';
import { crdFiles } from '../dist/src/kube/crds.js';

for (const dir of ['crds', 'charts/hostplane/files/crds']) {
  mkdirSync(dir, { recursive: true });
  for (const { file, yaml } of crdFiles()) writeFileSync(`${dir}/${file}`, yaml);
}
console.log(`wrote ${crdFiles().length} CRDs into crds/ and charts/hostplane/files/crds/`);
