import type { Store } from '../../src/store/index.js';

/**
 * A store whose notifications on `channel` can be held back, as if PostgreSQL's NOTIFY were slow or
 * a replica's LISTEN connection hung.
 */
export function heldChannel(channel: string) {
  let held: Array<() => void> | undefined;
  return {
    wrap: (store: Store): Store => ({
      ...store,
      listen: (name, onPayload, onReconnect) =>
        store.listen(
          name,
          name !== channel
            ? onPayload
            : (payload) => (held ? held.push(() => onPayload(payload)) : onPayload(payload)),
          onReconnect,
        ),
    }),
    hold: () => {
      held ??= [];
    },
    release: () => {
      const due = held ?? [];
      held = undefined;
      for (const deliver of due) deliver();
    },
  };
}
