import { describe, expect, it } from 'vitest';
import { checkPassword, contextWords, passwordWeakness } from '../../../src/passwords/index.js';

const rule = (password: string, context: string[] = []) => passwordWeakness(password, context)?.rule;

describe('password policy (NIST SP 800-63B)', () => {
  it('refuses repetitive passwords', () => {
    for (const p of ['aaaaaaaa', 'abababab', 'abcabcabc', 'xyzwxyzw', 'AAAAaaaa', 'zzzzzzz1', 'hello1hello1'])
      expect(rule(p), p).toBe('repetitive');
  });

  it('refuses sequences and keyboard runs', () => {
    for (const p of [
      'abcdefgh',
      'hgfedcba',
      '12345678',
      '98765432',
      '1234abcd',
      'ABCDEFGHij',
      'qwertyui',
      'asdfghjk',
      'poiuytre',
      'zxcvbnm,',
      '!@#$%^&*',
      'azertyui',
    ])
      expect(rule(p), p).toBe('sequential');
  });

  it('refuses the service’s name, the email, its local part and the site with simple variations', () => {
    expect(rule('hostplane')).toBe('context');
    expect(rule('hostplane2026')).toBe('context');
    expect(rule('HostPlane!')).toBe('context');
    expect(rule('h0stpl@ne99')).toBe('context');
    expect(rule('enalptsoh')).toBe('context');
    const email = 'jane.doe@example.com';
    expect(rule('jane.doe@example.com', [email])).toBe('context');
    expect(rule('Jane.Doe@Example.com1', [email])).toBe('context');
    expect(rule('jane.doe1234', [email])).toBe('context');
    expect(rule('example2026', [email])).toBe('context');
    expect(rule('my-blog-site', ['my-blog-site.localhost'])).toBe('context');
    expect(rule('myblogsite42', ['myblogsite.localhost', 'www.example.org'])).toBe('context');
    // Without the context, the same passwords are fine.
    expect(rule('jane.doe1234')).toBeUndefined();
    expect(rule('myblogsite42')).toBeUndefined();
  });

  it('accepts passwords with enough outside every pattern', () => {
    const context = ['owner@example.com', 'blog.localhost'];
    for (const p of [
      'correct horse battery staple',
      'correct horse battery',
      'long enough pw',
      'another good one',
      'Tr0ub4dor&3',
      'mydog1234cat',
      'my blog is the best blog ever',
      'studyhard',
      'q8#Lm2vP',
      'hostplane is a pleasant host for my stuff',
    ])
      expect(rule(p, context), p).toBeUndefined();
  });

  it('splits the context into words, skipping short ones', () => {
    expect(contextWords(['Jane.Doe@Example.com', 'ab.localhost'])).toEqual(
      expect.arrayContaining([
        'hostplane',
        'jane.doe@example.com',
        'jane.doe',
        'jane',
        'example',
        'localhost',
      ]),
    );
    expect(contextWords(['ab.localhost'])).not.toContain('ab');
  });

  it('throws PASSWORD_TOO_COMMON with a message naming the rule, never the password', () => {
    const thrown = (p: string, context: string[] = []) => {
      try {
        checkPassword(p, context);
      } catch (err) {
        return err as { code: string; message: string };
      }
      return undefined;
    };
    expect(thrown('abcdefgh')).toMatchObject({
      code: 'PASSWORD_TOO_COMMON',
      message: expect.stringMatching(/sequence/),
    });
    expect(thrown('aaaaaaaa')).toMatchObject({
      code: 'PASSWORD_TOO_COMMON',
      message: expect.stringMatching(/repeated/),
    });
    const own = thrown('someone@mail.test', ['someone@mail.test']);
    expect(own).toMatchObject({
      code: 'PASSWORD_TOO_COMMON',
      message: expect.stringMatching(/email address/),
    });
    expect(own!.message).not.toContain('someone');
    // The common list still answers first, with its own message.
    expect(thrown('password')).toMatchObject({
      code: 'PASSWORD_TOO_COMMON',
      message: expect.stringMatching(/too common/),
    });
    expect(thrown('short')).toMatchObject({ code: 'PASSWORD_TOO_SHORT' });
    expect(thrown('correct horse battery staple', ['someone@mail.test'])).toBeUndefined();
  });
});
