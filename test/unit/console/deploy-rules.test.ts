import { describe, expect, it } from 'vitest';
import {
  asOneFolder,
  DEFAULT_IGNORES,
  FILE_EXTENSIONS,
  ignoreRules,
  indexOf,
  MAX_FILE_BYTES,
  MAX_VIDEO_BYTES,
  namesDatabaseFile,
  pathRefusal,
  planDeploy,
  VIDEO_EXTENSIONS,
  type FolderFile,
} from '../../../console/src/screens/deploy-rules.js';
import { DEFAULT_IGNORES as CLI_IGNORES } from '../../../src/cli/deploy/walk.js';
import {
  MAX_FILE_BYTES as SERVER_MAX_FILE,
  MAX_VIDEO_BYTES as SERVER_MAX_VIDEO,
  namesDatabaseFile as serverNamesDatabase,
  normalizeSitePath,
  uploadExtensions,
  videoExtensions,
} from '../../../src/files/index.js';

// The console's folder deploy mirrors the CLI's skip rules and the server's path, type and size
// rules (the browser bundle cannot import them): these tests hold the mirror to the originals.

const file = (relative: string, content: string | number = 'x'): FolderFile => ({
  relative,
  file: new File(
    [typeof content === 'number' ? new Uint8Array(content) : content],
    relative.split('/').pop()!,
  ),
});

describe('the console’s deploy rules mirror the CLI and the server', () => {
  it('has the same extensions, size limits and default ignores', () => {
    expect([...FILE_EXTENSIONS].sort()).toEqual([...uploadExtensions].sort());
    expect([...VIDEO_EXTENSIONS].sort()).toEqual([...videoExtensions].sort());
    expect([MAX_FILE_BYTES, MAX_VIDEO_BYTES]).toEqual([SERVER_MAX_FILE, SERVER_MAX_VIDEO]);
    expect(DEFAULT_IGNORES).toEqual(CLI_IGNORES);
  });

  it('names database files and refuses paths as the server does', () => {
    const paths = [
      'index.html',
      'data/app.sqlite',
      'DATA.DB/x.html',
      'a/b.sqlite3-wal',
      'notes.db.txt',
      'x.Db. ',
      'a\u202eb.html',
      'a\\b.html',
      ' lead.html',
      'a/ trail /b.html',
      `${'a'.repeat(256)}.html`,
      `${'a/'.repeat(32)}x.html`,
      `${'abcdefgh/'.repeat(120)}x.html`,
      'café/ok.html',
    ];
    for (const path of paths) {
      expect(namesDatabaseFile(path), path).toBe(serverNamesDatabase(path));
      if (serverNamesDatabase(path)) continue;
      let serverRefuses = false;
      try {
        normalizeSitePath(path);
      } catch {
        serverRefuses = true;
      }
      expect(pathRefusal(path) !== undefined, path).toBe(serverRefuses);
    }
  });
});

describe('planDeploy', () => {
  it('leaves out what hostplane deploy leaves out and names what the server would refuse', async () => {
    const files = [
      file('index.html'),
      file('css/site.css'),
      file('.git/HEAD'),
      file('node_modules/x/index.js'),
      file('.hostplaneignore', 'drafts/\n!drafts/keep.html\n'),
      file('drafts/secret.html'),
      file('app.sqlite'),
      file('tool.exe'),
      file('LICENSE'),
      file('big.png', MAX_FILE_BYTES + 1),
      file('clip.mp4', MAX_FILE_BYTES + 1),
      file('cafe\u0301.html'),
      file('caf\u00e9.html'),
    ];
    const plan = planDeploy(files, await ignoreRules(files));
    expect(plan.files.map((f) => f.path)).toEqual([
      'caf\u00e9.html',
      'clip.mp4',
      'css/site.css',
      'index.html',
    ]);
    expect(plan.ignored).toBe(4);
    expect(plan.databases).toEqual(['app.sqlite']);
    expect(plan.refused).toEqual([
      { path: 'LICENSE', reason: 'a file needs an extension' },
      { path: 'big.png', reason: '10.0 MB, over the 10 MB limit of a file' },
      {
        path: 'caf\u00e9.html',
        reason: 'the same site path as cafe\u0301.html once normalized to Unicode NFC',
      },
      { path: 'tool.exe', reason: '.exe files are not served by Hostplane' },
    ]);
  });

  it('takes one folder as the root and finds its index page', () => {
    expect(asOneFolder([file('a.html')])).toBeUndefined();
    expect(asOneFolder([file('site/a.html'), file('other/b.html')])).toBeUndefined();
    const one = asOneFolder([file('site/index.html'), file('site/css/a.css')])!;
    expect(one.name).toBe('site');
    expect(one.files.map((f) => f.relative)).toEqual(['index.html', 'css/a.css']);
    expect(indexOf(one.files)).toEqual({ root: true });
    expect(indexOf([file('dist/index.html'), file('src/a.js'), file('README.txt')])).toEqual({
      root: false,
      nested: 'dist',
    });
    expect(indexOf([file('a/index.html'), file('b/index.html')])).toEqual({ root: false });
  });
});
