/**
 * Tables that are wider than their box (a phone's width) scroll inside it: every `.table-wrap` on
 * the page gets `data-more` = "left", "right", both or "" after each scroll and resize, and the
 * stylesheet shows a shadow and a line on the side with more. Wraps are found as screens render
 * them, so no screen does anything for it.
 */
const watched = new WeakSet<Element>();

function update(wrap: Element) {
  const more: string[] = [];
  if (wrap.scrollLeft > 1) more.push('left');
  if (wrap.scrollLeft + wrap.clientWidth < wrap.scrollWidth - 1) more.push('right');
  const value = more.join(' ');
  if (wrap.getAttribute('data-more') !== value) wrap.setAttribute('data-more', value);
}

export function watchTableScroll(root: HTMLElement = document.body): void {
  const resized = new ResizeObserver((entries) =>
    entries.forEach((entry) => update(entry.target.closest('.table-wrap') ?? entry.target)),
  );
  const watch = () => {
    for (const wrap of root.querySelectorAll('.table-wrap')) {
      if (watched.has(wrap)) {
        update(wrap);
        continue;
      }
      watched.add(wrap);
      wrap.addEventListener('scroll', () => update(wrap), { passive: true });
      resized.observe(wrap);
      const table = wrap.firstElementChild;
      if (table) resized.observe(table);
      update(wrap);
    }
  };
  new MutationObserver(watch).observe(root, { childList: true, subtree: true });
  watch();
}
