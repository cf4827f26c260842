import { ChildProcess } from 'node:child_process';

export interface StartOptions {
  /** 0 (the default): a free port. */
  port?: number;
  /** Where the node keeps its data (kept); default: a temporary directory deleted at exit. */
  dataDir?: string;
  /** Broker properties by Kafka's names, e.g. {'num.partitions': 3}. */
  properties?: Record<string, string | number | boolean>;
  /** How long to wait for the node to serve (default 30000). */
  timeoutMs?: number;
}

export declare class Node {
  readonly process: ChildProcess;
  readonly pid: number;
  /** host:port for any Kafka client. */
  readonly bootstrapServers: string;
  /** Where the node keeps its data. */
  readonly dataDir: string;
  readonly port: number;
  /** The last 64 KiB of the node's log. */
  log(): string;
  /** SIGTERM, then SIGKILL after timeoutMs; resolves to the exit code. */
  stop(timeoutMs?: number): Promise<number | null>;
}

export declare function start(options?: StartOptions): Promise<Node>;
export declare function binary(): string;
