'use strict';
// Starts throwaway Samsa nodes (`samsa dev`) for tests:
//   const { start } = require('samsa');
//   const node = await start();          // a free port, a temporary data directory
//   node.bootstrapServers;               // '127.0.0.1:PORT', for any Kafka client
//   await node.stop();
// Nodes still running when this process exits are sent SIGTERM; each deletes its own data.

const { spawn } = require('node:child_process');
const path = require('node:path');

const LOG_KEPT = 64 * 1024;
const running = new Set();

/** The samsa binary: $SAMSA_BIN, else the one in this package. */
function binary() {
  return process.env.SAMSA_BIN || path.join(__dirname, 'bin', 'samsa');
}

function flag(key, value) {
  return `--${key}=${typeof value === 'boolean' ? String(value) : value}`;
}

class Node {
  constructor(child, bootstrapServers, dataDir, log) {
    this.process = child;
    this.pid = child.pid;
    this.bootstrapServers = bootstrapServers;
    this.dataDir = dataDir;
    this._log = log;
    this._exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
      else child.once('exit', (code) => resolve(code));
    });
  }

  get port() {
    return Number(this.bootstrapServers.slice(this.bootstrapServers.lastIndexOf(':') + 1));
  }

  /** The last 64 KiB of the node's log. */
  log() {
    return this._log.text();
  }

  /** SIGTERM (a clean shutdown), SIGKILL after timeoutMs; resolves to the exit code. */
  async stop(timeoutMs = 10000) {
    running.delete(this);
    const child = this.process;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      let timer;
      const killed = new Promise((resolve) => {
        timer = setTimeout(() => {
          child.kill('SIGKILL');
          resolve();
        }, timeoutMs);
      });
      await Promise.race([this._exited, killed]);
      clearTimeout(timer);
    }
    return this._exited;
  }
}

function tail() {
  let chunks = [];
  let size = 0;
  return {
    push(chunk) {
      chunks.push(chunk);
      size += chunk.length;
      while (size > LOG_KEPT && chunks.length > 1) size -= chunks.shift().length;
    },
    text() {
      return Buffer.concat(chunks).toString('utf8');
    },
  };
}

/**
 * Starts a node and resolves once it serves.
 * options: port (0: a free one), dataDir (kept; default: a temporary directory deleted at
 * exit), properties ({'num.partitions': 3}: broker properties by Kafka's names), timeoutMs.
 */
function start(options = {}) {
  const { port = 0, dataDir, properties = {}, timeoutMs = 30000 } = options;
  const args = ['dev', '--port', String(port)];
  if (dataDir !== undefined) args.push(flag('log.dirs', dataDir));
  for (const [key, value] of Object.entries(properties)) args.push(flag(key, value));
  // SAMSA_* variables are broker properties to samsa; SAMSA_BIN is only this helper's.
  const env = { ...process.env };
  delete env.SAMSA_BIN;
  const child = spawn(binary(), args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const log = tail();
  child.stderr.on('data', (chunk) => log.push(chunk));
  return new Promise((resolve, reject) => {
    let out = '';
    let timer;
    const fail = (why) => {
      clearTimeout(timer);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      const err = new Error(`samsa did not start (${why}): ${binary()} ${args.join(' ')}\n${log.text()}`);
      reject(err);
    };
    timer = setTimeout(() => fail(`not serving after ${timeoutMs} ms`), timeoutMs);
    child.once('error', (e) => fail(e.message));
    child.once('exit', (code, signal) => fail(`exited with ${code ?? signal}`));
    child.stdout.on('data', (chunk) => {
      out += chunk.toString('utf8');
      const lines = out.split('\n');
      const value = (key) => {
        const line = lines.find((l) => l.startsWith(`${key}=`));
        return line === undefined ? undefined : line.slice(key.length + 1).trim();
      };
      const bootstrap = value('bootstrap.servers');
      if (bootstrap === undefined) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.removeAllListeners('error');
      // A forgotten node does not keep the event loop (a test runner) alive.
      child.unref();
      child.stdout.unref();
      child.stderr.unref();
      const node = new Node(child, bootstrap, value('log.dirs'), log);
      running.add(node);
      resolve(node);
    });
  });
}

process.once('exit', () => {
  for (const node of running) {
    try {
      node.process.kill('SIGTERM');
    } catch (_) {
      // already gone
    }
  }
});

module.exports = { start, binary, Node };
