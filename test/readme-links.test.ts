import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Every link of README.md that is not a web address resolves inside the repository: a
 * relative path names a file or directory that exists (the part before any #), and an
 * in-page #anchor names one of README's headings (GitHub's anchors).
 */

const ROOT = path.resolve(import.meta.dirname, '..');

/** Markdown without fenced code blocks and code spans, where brackets are not links. */
function withoutCode(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[\s\S]*?\1/g, '');
}

/** The targets of inline links and images, `[text](target "title")`, and of reference definitions, `[label]: target`. */
function linkTargets(markdown: string): string[] {
  const text = withoutCode(markdown);
  const inline = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!);
  const references = [...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((match) => match[1]!);
  return [...inline, ...references];
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of withoutCode(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = heading!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

const isWebAddress = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** The links of `markdown` (a file in `directory`) that do not resolve inside the repository. */
function brokenLinks(markdown: string, directory: string): string[] {
  const anchors = headingAnchors(markdown);
  return linkTargets(markdown).filter((target) => {
    if (isWebAddress(target)) return false;
    if (target.startsWith('#')) return !anchors.has(decodeURIComponent(target.slice(1)));
    const file = path.resolve(directory, decodeURIComponent(target.split('#')[0]!));
    return !(file === ROOT || file.startsWith(`${ROOT}${path.sep}`)) || !fs.existsSync(file);
  });
}

describe("README's links", () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

  it('all resolve inside the repository: files and directories exist, anchors name headings', () => {
    expect(brokenLinks(readme, ROOT)).toEqual([]);
  });

  it('are all found: relative paths, in-page anchors and web addresses alike', () => {
    const targets = linkTargets(readme);
    expect(targets).toContain('src/domain/access.ts');
    expect(targets).toContain('#running-in-production');
    expect(targets.some(isWebAddress)).toBe(true);
  });

  it('would be reported when broken: a missing file, a missing heading, a path out of the repository; code is not read as links', () => {
    const sample = [
      '# Title',
      '## Running in production',
      'See [the policy](src/domain/access.ts), [gone](src/no-such-file.ts), [up](../outside.md),',
      '[here](#running-in-production), [nowhere](#no-such-heading), [web](https://example.com/x) and [ref].',
      '`[not a link](missing-in-code.ts)`',
      '```md',
      '[not a link either](missing-in-fence.ts)',
      '```',
      '[ref]: test/missing-reference.md',
    ].join('\n');
    expect(brokenLinks(sample, ROOT)).toEqual(['src/no-such-file.ts', '../outside.md', '#no-such-heading', 'test/missing-reference.md']);
  });
});
