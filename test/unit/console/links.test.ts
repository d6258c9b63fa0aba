import { describe, expect, it } from 'vitest';
import { DATABASE_TABS, match, paths, SITE_TABS, to } from '../../../console/src/links.js';

// The console's links are built in one module (console/src/links.ts) from the same patterns the
// route table matches, so a screen links to another without importing the route table (which
// imports every screen). These tests hold each builder to its pattern: what a link writes, the
// router reads back, whatever an id or a path holds.

const AWKWARD = 'a b/c?d#e%f';

/** The patterns that match an address (its path part): one and only one, or the router is ambiguous. */
function patternsFor(address: string): string[] {
  const path = address.split('?')[0] ?? '';
  return Object.values(paths).filter((pattern) => match(pattern, path) !== undefined);
}

function query(address: string): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(address.split('?')[1] ?? ''));
}

describe('console links', () => {
  it('fills each pattern so that the router reads the same values back, awkward ones too', () => {
    const cases: [string, string, Record<string, string>][] = [
      [to.site(7), paths.site, { siteId: '7' }],
      [to.forms(7), paths.forms, { siteId: '7' }],
      [to.form(7, AWKWARD), paths.form, { siteId: '7', formId: AWKWARD }],
      [to.formEmbed(7, 'f1'), paths.formEmbed, { siteId: '7', formId: 'f1' }],
      [to.formSubmissions(7, 'f1'), paths.formSubmissions, { siteId: '7', formId: 'f1' }],
      [to.sqlite(7), paths.sqlite, { siteId: '7' }],
      [to.sqliteTokens(7), paths.sqliteTokens, { siteId: '7' }],
      [to.database(7, AWKWARD, 'tables'), paths.databaseTables, { siteId: '7', db: AWKWARD }],
      [to.database(7, 'data/app.db', 'query'), paths.databaseQuery, { siteId: '7', db: 'data/app.db' }],
      [to.database('7', 'app.db', 'users'), paths.databaseUsers, { siteId: '7', db: 'app.db' }],
    ];
    for (const [address, pattern, params] of cases) {
      expect(patternsFor(address), address).toEqual([pattern]);
      expect(match(pattern, address), address).toEqual(params);
    }
  });

  it('writes the query of a link so that the screen reads it back', () => {
    expect(query(to.siteFiles(7, AWKWARD))).toEqual({ folder: AWKWARD });
    expect(to.siteFiles(7)).toBe('/sites/7/files');
    expect(to.siteFiles(7, '')).toBe('/sites/7/files');
    expect(query(to.sqliteTokens(7, 'data/app.db'))).toEqual({ db: 'data/app.db' });
    expect(query(to.signIn('/sites/7/files?folder=a&b'))).toEqual({ next: '/sites/7/files?folder=a&b' });
    expect(to.signIn()).toBe('/sign-in');
  });

  it('gives each tab of a site and of a database one route of its own', () => {
    for (const tab of SITE_TABS) {
      const address = to.siteTab(7, tab);
      expect(address).toBe(`/sites/7/${tab}`);
      expect(patternsFor(address), address).toHaveLength(1);
    }
    for (const tab of DATABASE_TABS) expect(patternsFor(to.database(7, 'app.db', tab))).toHaveLength(1);
  });

  it('links the pages without parameters to their own patterns', () => {
    const plain = [to.sites, to.plans, to.account, to.forgot, to.signUp];
    for (const link of plain) expect(patternsFor(link()), link()).toEqual([link()]);
  });

  it('reads no address that its pattern does not name', () => {
    expect(match(paths.site, '/sites/7/files')).toBeUndefined();
    expect(match(paths.siteFiles, '/sites/7/keys')).toBeUndefined();
    expect(match(paths.sites, '/')).toEqual({});
  });
});
