export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * JSON lines on stdout: one object per event with `time`, `level`, `msg` and fields.
 * Callers pass identifiers and measurements only, never tokens or memory content.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

const SEVERITY: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/**
 * Drizzle puts a failed statement's parameters (memory content, key hashes) into its error
 * message after "params:"; a PostgreSQL error's `detail` quotes row values. Neither is logged:
 * only the message before the parameters, the error code, the stack's frames and the cause.
 */
function describeError(error: unknown, depth = 0): Record<string, unknown> {
  if (!(error instanceof Error)) return { type: typeof error };
  const described: Record<string, unknown> = {
    name: error.name,
    message: error.message.split('\nparams:')[0],
    stack: (error.stack ?? '')
      .split('\n')
      .filter((line) => /^\s+at /.test(line))
      .join('\n'),
  };
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') described.code = code;
  if (error.cause !== undefined && depth < 3) described.cause = describeError(error.cause, depth + 1);
  return described;
}

export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stdout.write(line)): Logger {
  const threshold = SEVERITY[level];
  const emit = (eventLevel: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>) => {
    if (SEVERITY[eventLevel] < threshold) return;
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level: eventLevel, msg };
    for (const [key, value] of Object.entries(fields ?? {})) entry[key] = key === 'error' ? describeError(value) : value;
    write(`${JSON.stringify(entry)}\n`);
  };
  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
  };
}

export const silentLogger: Logger = createLogger('silent');
