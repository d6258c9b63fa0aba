import { z } from 'zod';

/**
 * How log lines are written (HOSTPLANE_LOG_FORMAT): `json` (pino's one JSON object a line, what a
 * log collector reads), `pretty` (pino-pretty: a short time, a level word, the message and its
 * fields, colours on a terminal), or `auto` (the default): pretty when the log's stream is a
 * terminal, JSON otherwise. The chart sets `json` on every workload: always JSON in the cluster.
 */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormatSetting = (typeof LOG_FORMATS)[number];
export type LogFormat = Exclude<LogFormatSetting, 'auto'>;

export const logFormatSchema = z.enum(LOG_FORMATS).default('auto');

/** The format a logger writes in: an explicit setting wins; `auto` follows the stream (a TTY or not). */
export function chooseLogFormat(setting: LogFormatSetting, streamIsTTY: boolean): LogFormat {
  if (setting !== 'auto') return setting;
  return streamIsTTY ? 'pretty' : 'json';
}
