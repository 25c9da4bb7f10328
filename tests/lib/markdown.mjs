// Markdown as GitHub renders it, for the tests that read the repository's documents:
//   slug(heading)   the anchor GitHub gives a heading: lower case, punctuation dropped (not
//                   '-' or '_'), each space a '-' (tests/docs/links.test.mjs checks links with
//                   it; tests/docs/readme-claims.test.mjs the README's table of contents)
export function slug(heading) {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]*>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-');
}
