// Copies one tagged image out of deploy/image/build.sh's cache layout into a layout of its own (the
// contents of the OCI archive), named by its full reference (docker.io/library/hostplane:dev) in
// both annotations: `ctr images import` keeps io.containerd.image.name as it is (a bare tag in
// ref.name would need --base-name), umoci and skopeo read org.opencontainers.image.ref.name.
//   node oci-export.mjs <cache layout> <tag in it> <new layout dir> <full reference>
// Prints "<manifest digest> <compressed bytes> <uncompressed bytes>" (the layers, gunzipped).
/* global console, process -- Node globals; the ESLint config has none for .mjs */
import { createReadStream, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';

const [src, tag, dst, reference] = process.argv.slice(2);
if (!src || !tag || !dst || !reference) {
  console.error('usage: oci-export.mjs <cache layout> <tag> <new layout dir> <full reference>');
  process.exit(2);
}

const blobPath = (layout, digest) => path.join(layout, 'blobs', ...digest.split(':'));
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

const index = readJson(path.join(src, 'index.json'));
const entry = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag);
if (!entry) {
  console.error(`oci-export: no image tagged ${tag} in ${src}`);
  process.exit(1);
}
const manifest = readJson(blobPath(src, entry.digest));
const descriptors = [entry, manifest.config, ...manifest.layers];

rmSync(dst, { recursive: true, force: true });
mkdirSync(path.join(dst, 'blobs', 'sha256'), { recursive: true });
for (const d of descriptors) linkSync(blobPath(src, d.digest), blobPath(dst, d.digest));
writeFileSync(path.join(dst, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
const named = {
  mediaType: entry.mediaType,
  digest: entry.digest,
  size: entry.size,
  annotations: {
    'io.containerd.image.name': reference,
    'org.opencontainers.image.ref.name': reference,
  },
};
writeFileSync(
  path.join(dst, 'index.json'),
  JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [named],
  }),
);

let compressed = 0;
let uncompressed = 0;
for (const d of descriptors) compressed += d.size;
for (const layer of manifest.layers) {
  const gunzip = createGunzip();
  const reading = pipeline(createReadStream(blobPath(src, layer.digest)), gunzip);
  for await (const chunk of gunzip) uncompressed += chunk.length;
  await reading;
}
console.log(`${entry.digest} ${compressed} ${uncompressed}`);
