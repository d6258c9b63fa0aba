// Builds the console (console/src, Preact + TSX) into dist/console: one minified ES module and one
// stylesheet with content hashes in their names (cached for good), and index.html naming them
// (never cached). Nothing is fetched at run time: the bundle holds Preact itself.
/* global console -- a Node global; the ESLint config has none for .mjs */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const out = 'dist/console';
rmSync(out, { recursive: true, force: true });
const result = await build({
  entryPoints: ['console/src/main.tsx'],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
  outdir: path.join(out, 'assets'),
  entryNames: '[name]-[hash]',
  tsconfig: 'console/tsconfig.json',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  sourcemap: 'linked',
  metafile: true,
  legalComments: 'linked',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs);
const named = (ext) => {
  const file = outputs.find((name) => name.endsWith(ext));
  if (!file) throw new Error(`console build: no ${ext} output`);
  return file;
};
const js = named('.js');
const css = named('.css');
const html = readFileSync('console/index.html', 'utf8')
  .replace('%JS%', path.basename(js))
  .replace('%CSS%', path.basename(css));
writeFileSync(path.join(out, 'index.html'), html);

// Precompressed beside each: the server sends the variant the browser's Accept-Encoding allows
// (src/console), so no request compresses anything at run time.
for (const file of [js, css]) {
  const bytes = readFileSync(file);
  writeFileSync(`${file}.gz`, gzipSync(bytes, { level: 9 }));
  writeFileSync(
    `${file}.br`,
    brotliCompressSync(bytes, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
        [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
      },
    }),
  );
}

const sizeOf = (file) => {
  const bytes = readFileSync(file);
  return {
    file: path.relative(out, file),
    bytes: bytes.length,
    gzip: readFileSync(`${file}.gz`).length,
    brotli: readFileSync(`${file}.br`).length,
  };
};
const sizes = { js: sizeOf(js), css: sizeOf(css) };
writeFileSync(path.join(out, 'build.json'), JSON.stringify(sizes, null, 2) + '\n');
const kb = (n) => (n / 1024).toFixed(1);
console.log(
  `console: ${kb(sizes.js.bytes)} KB JS (${kb(sizes.js.brotli)} KB brotli, ${kb(sizes.js.gzip)} KB gzip), ` +
    `${kb(sizes.css.bytes)} KB CSS (${kb(sizes.css.brotli)} KB brotli, ${kb(sizes.css.gzip)} KB gzip)`,
);
