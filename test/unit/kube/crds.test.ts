import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { crdFiles } from '../../../src/kube/crds.js';
import { siteSpecSchema } from '../../../src/kube/resources.js';

const read = (dir: string, file: string) =>
  readFile(new URL(`../../../${dir}/${file}`, import.meta.url), 'utf8');

describe('the CustomResourceDefinitions', () => {
  it.each(crdFiles().map((f) => [f.file, f.yaml] as const))(
    '%s in crds/ and charts/hostplane/files/crds/ is what src/kube/resources.ts generates (run `npm run crds`)',
    async (file, generated) => {
      expect(await read('crds', file)).toBe(generated);
      expect(await read('charts/hostplane/files/crds', file)).toBe(generated);
    },
  );

  it('crds/ and the chart hold exactly the generated files (the chart renders every file it holds)', async () => {
    const names = crdFiles()
      .map((f) => f.file)
      .sort();
    for (const dir of ['crds', 'charts/hostplane/files/crds']) {
      const files = (await readdir(new URL(`../../../${dir}/`, import.meta.url))).filter((f) =>
        f.endsWith('.yaml'),
      );
      expect(files.sort(), dir).toEqual(names);
    }
  });

  it('carry the zod rules: the slug pattern, enums with defaults, required fields', () => {
    const site = parse(crdFiles().find((f) => f.file === 'sites.hostplane.dev.yaml')?.yaml ?? '');
    const spec = site.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(spec.required).toEqual(['slug']);
    expect(new RegExp(spec.properties.slug.pattern).test('my-site')).toBe(true);
    expect(new RegExp(spec.properties.slug.pattern).test('-bad')).toBe(false);
    expect(spec.properties.deletionPolicy).toMatchObject({ enum: ['Retain', 'Delete'], default: 'Retain' });
    expect(spec.properties.customDomains['x-kubernetes-list-type']).toBe('set');
    // Structural schemas may not say additionalProperties: false.
    expect(JSON.stringify(site)).not.toContain('additionalProperties');
  });

  it('and the TypeScript side validate alike (zod applies the same defaults)', () => {
    expect(siteSpecSchema.parse({ slug: 'docs' })).toEqual({ slug: 'docs', deletionPolicy: 'Retain' });
    expect(siteSpecSchema.safeParse({ slug: 'Docs' }).success).toBe(false);
    expect(siteSpecSchema.safeParse({ slug: 'docs', customDomains: ['Upper.example'] }).success).toBe(false);
  });
});
