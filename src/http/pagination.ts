/** The `pagination` object of the list endpoints (files list, form submissions): pages from 1. */
export function paginationJson(page: number, perPage: number, total: number) {
  const totalPages = Math.max(1, Math.ceil(total / perPage));
  return {
    current_page: page,
    per_page: perPage,
    total_items: total,
    total_pages: totalPages,
    has_more: page < totalPages,
    is_last_page: page >= totalPages,
  };
}
