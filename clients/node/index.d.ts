import type { ChildProcess } from 'node:child_process';

/** The signage binary: `$SIGNAGE_BIN`, else the one the platform package installed. */
export function binaryPath(): string;

/** `signage serve --port 0` on `database` (default `:memory:`), resolved once it listens. */
export function start(options?: { database?: string; args?: string[]; env?: Record<string, string> }): Promise<{
  url: string;
  stop(): Promise<void>;
  process: ChildProcess;
}>;
