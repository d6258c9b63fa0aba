import { describe, expect, it } from 'vitest';
import {
  listAll,
  paths,
  okJson,
  publicUrl,
  put,
  urlPathOf,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';

describe.each(backends)('files API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'files');
  const { freshSite } = fixture;

  describe('unicode and special names', () => {
    it('stores café/naïve.html and serves it at its percent-encoded URL', async () => {
      const api = await freshSite();
      const body = await okJson(await api.upload({ path: 'café/naïve.html', content: '<p>ok</p>' }));
      expect(body.path).toBe('café/naïve.html');
      expect(body.url).toBe(`http://${api.site.slug}.localhost:8080/caf%C3%A9/na%C3%AFve.html`);
      const res = await api.serve('/caf%C3%A9/na%C3%AFve.html');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('<p>ok</p>');
      expect((await okJson(await api.get('café/naïve.html'))).content).toBe('<p>ok</p>');
      expect(paths(await listAll(api))).toEqual(['café', 'café/naïve.html']);
    });

    it('treats the decomposed (NFD) spelling as the same file as the composed one', async () => {
      const api = await freshSite();
      await put(api, 'cafe\u0301.html', 'one');
      await put(api, 'caf\u00e9.html', 'two');
      const entries = await listAll(api);
      expect(paths(entries)).toEqual(['caf\u00e9.html']);
      expect((await okJson(await api.get('cafe\u0301.html'))).content).toBe('two');
      expect(await (await api.serve('/cafe%CC%81.html')).text()).toBe('two');
    });

    it.each([
      '日本語/ページ.html',
      '🎉.html',
      'my page.html',
      '100%.html',
      'a#b.html',
      'q?.txt',
      "it's & more.txt",
    ])('uploads, lists, gets and serves %j', async (path) => {
      const api = await freshSite();
      await put(api, path, `content of ${path}`);
      const entry = (await listAll(api)).find((e) => e.path === path);
      expect(entry?.url).toBe(publicUrl(api.site, path));
      expect((await okJson(await api.get(path))).content).toBe(`content of ${path}`);
      const res = await api.serve(urlPathOf(path));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(`content of ${path}`);
    });

    it('renames and deletes a unicode file', async () => {
      const api = await freshSite();
      await put(api, 'über.html', 'x');
      await okJson(await api.rename({ old_path: 'über.html', new_path: 'ñandú/ü.html' }));
      expect((await api.serve(urlPathOf('ñandú/ü.html'))).status).toBe(200);
      await okJson(await api.delete('ñandú/ü.html'));
      expect(paths(await listAll(api))).toEqual(['ñandú']);
    });
  });
});
