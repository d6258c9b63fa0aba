import { okJson, put, type FilesApi } from './files-api.js';

/** A small site: a folder with nested files and an empty sub-folder, plus look-alike siblings. */
export async function seed(api: FilesApi): Promise<void> {
  await put(api, 'index.html', 'home');
  await put(api, 'src/index.html', 'src home');
  await put(api, 'src/css/site.css', 'body{}');
  await put(api, 'src/img/logo.svg', '<svg/>');
  await okJson(await api.createFolder({ path: 'src/empty' }));
  await put(api, 'src-old/keep.html', 'look-alike prefix');
  await put(api, 'srcx/keep.html', 'another look-alike');
}

/** Every entry `seed` puts under src/. */
export const SRC_TREE = [
  'src',
  'src/css',
  'src/css/site.css',
  'src/empty',
  'src/img',
  'src/img/logo.svg',
  'src/index.html',
];
/** Every entry `seed` puts outside src/. */
export const OTHERS = ['index.html', 'src-old', 'src-old/keep.html', 'srcx', 'srcx/keep.html'];
