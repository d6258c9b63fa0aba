import type { KubernetesObject } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseManifests } from './helm.js';

/**
 * The CRDs of projects Hostplane works with (cert-manager, the Gateway API), exactly as those
 * projects publish them: read from their Go modules, pinned with checksums in test/tools/crds
 * (go.mod, go.sum), which `go mod download` puts in the module cache (once; then offline).
 */

const WRAPPER_DIR = fileURLToPath(new URL('../../tools/crds/', import.meta.url));

/** The module's folder in the Go module cache, at the version test/tools/crds pins. */
async function moduleDir(module: string): Promise<string> {
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      'go',
      ['mod', 'download', '-json', module],
      { cwd: WRAPPER_DIR, timeout: 300_000 },
      (err, out, stderr) =>
        err ? reject(new Error(`go mod download ${module}: ${stderr || err.message}`)) : resolve(out),
    );
  });
  const info = JSON.parse(stdout) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${module}: ${info.Error ?? 'no Dir'}`);
  return info.Dir;
}

async function crdsFrom(module: string, files: string[]): Promise<KubernetesObject[]> {
  const dir = await moduleDir(module);
  const objects: KubernetesObject[] = [];
  for (const file of files) objects.push(...parseManifests(await readFile(path.join(dir, file), 'utf8')));
  return objects.filter((o) => o.kind === 'CustomResourceDefinition');
}

/** cert-manager's Certificate CRD (deploy/crds: the source its chart's CRDs are made from). */
export function certManagerCrds(): Promise<KubernetesObject[]> {
  return crdsFrom('github.com/cert-manager/cert-manager', ['deploy/crds/cert-manager.io_certificates.yaml']);
}

/** The Gateway API's standard channel: GatewayClass, Gateway, HTTPRoute, ReferenceGrant. */
export function gatewayApiCrds(): Promise<KubernetesObject[]> {
  return crdsFrom(
    'sigs.k8s.io/gateway-api',
    ['gatewayclasses', 'gateways', 'httproutes', 'referencegrants'].map(
      (plural) => `config/crd/standard/gateway.networking.k8s.io_${plural}.yaml`,
    ),
  );
}
