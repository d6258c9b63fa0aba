/** One file or folder of a site, as the files API lists it (site-files.tsx and its actions share it). */
export interface Entry {
  path: string;
  name: string;
  type: 'file' | 'folder';
  size: number;
  url: string | null;
  parent: string | null;
}
