// Markdown as GitHub reads it, as far as the documentation's link check needs: headings and their
// anchors, and the links of a page. No npm package for GitHub's slugs (github-slugger) is in the
// project, so the slug rule is written here, with its cases in test/unit/docs/markdown.test.ts.

/** Blanks fenced code blocks (``` or ~~~), keeping line numbers: nothing in them is a heading or a link. */
export function withoutFences(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const open = /^ {0,3}(`{3,}|~{3,})/.exec(line);
      if (fence === undefined && open) {
        fence = open[1];
        return '';
      }
      if (fence !== undefined) {
        if (new RegExp(`^ {0,3}${fence[0]}{${fence.length},}\\s*$`).test(line)) fence = undefined;
        return '';
      }
      return line;
    })
    .join('\n');
}

/** Blanks inline code spans (`x`, ``x``): a link written inside one is text, not a link. */
export const withoutCodeSpans = (text: string): string =>
  text.replace(/(`+)(?!`)[\s\S]*?[^`]\1(?!`)|(`+)[^`]\2(?!`)/g, (span) => ' '.repeat(span.length));

/** A heading's text as GitHub renders it: code spans, links, emphasis and HTML tags reduced to text. */
function headingText(raw: string): string {
  return raw
    .replace(/\s+#+\s*$/, '') // closing hashes
    .replace(/`+([^`]*)`+/g, '$1')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/\*+/g, '');
}

/**
 * GitHub's anchor for a heading (github-slugger's rule): lower case, every character that is not a
 * letter, mark, number, connector (`_`), hyphen or space dropped, each space a hyphen.
 */
export const slugify = (heading: string): string =>
  headingText(heading)
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');

/** Every anchor a page offers: its headings' slugs, a repeated slug numbered -1, -2 … as GitHub does. */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of withoutFences(markdown).split('\n')) {
    const heading = /^ {0,3}#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const slug = slugify(heading[1] ?? '');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  // Explicit anchors: <a id="…"> and <a name="…">.
  for (const [, id] of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id ?? '');
  return anchors;
}

export interface Link {
  target: string;
  line: number;
}

/** The links of a page ([text](target), [text](<target>), [label]: target), outside code. */
export function linksOf(markdown: string): Link[] {
  const text = withoutCodeSpans(withoutFences(markdown));
  const lineAt = (index: number) => text.slice(0, index).split('\n').length;
  const links: Link[] = [];
  for (const match of text.matchAll(/\]\(\s*(<[^>]*>|[^\s)]*)(?:\s+"[^"]*")?\s*\)/g)) {
    links.push({ target: (match[1] ?? '').replace(/^<|>$/g, ''), line: lineAt(match.index) });
  }
  for (const match of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*(\S+)/gm)) {
    links.push({ target: match[1] ?? '', line: lineAt(match.index) });
  }
  return links;
}

/** A link that leaves the repository (a scheme or a network path) is not checked here. */
export const isExternal = (target: string): boolean =>
  /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');
