'use strict';
// Run by scripts/package/test from a clean npm prefix into which only the samsa package and
// kafkajs were installed: the installed binary (npx samsa) and the JS helper, through a real
// client.
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { start, binary } = require('samsa');
const { Kafka, logLevel } = require('kafkajs');

const failures = [];
function check(name, ok, detail) {
  console.log(`${ok ? 'ok' : 'FAILED'}: ${name}${detail !== undefined ? ` (${detail})` : ''}`);
  if (!ok) failures.push(name);
}

function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch (_) {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch (_) {
    return false;
  }
}

async function gone(pid, withinMs = 10000) {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

function client(node) {
  return new Kafka({ clientId: 'samsa-npm-check', brokers: [node.bootstrapServers], logLevel: logLevel.ERROR });
}

async function main() {
  const installed = fs.realpathSync(path.join(process.cwd(), 'node_modules', 'samsa', 'bin', 'samsa'));
  check('the helper finds the installed binary', fs.realpathSync(binary()) === installed, binary());
  const npx = spawnSync('npx', ['--no-install', 'samsa', '--version'], { encoding: 'utf8' });
  check('npx samsa runs the installed binary', npx.status === 0 && /^samsa \S+ \(commit \S+\)$/.test(npx.stdout.trim()),
    (npx.stdout + npx.stderr).trim());

  const began = Date.now();
  let node = await start();
  console.log(`start() resolved after ${Date.now() - began} ms: ${node.bootstrapServers} (pid ${node.pid})`);
  check('bootstrapServers is host:port on loopback', /^127\.0\.0\.1:\d+$/.test(node.bootstrapServers) && node.port > 0,
    node.bootstrapServers);
  const topic = `npm-${process.pid}`;
  const kafka = client(node);
  const producer = kafka.producer({ allowAutoTopicCreation: true });
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: [{ key: 'k', value: 'hello from npm' }] });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: `g-${topic}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = await new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), 30000);
    consumer.run({
      eachMessage: async ({ message }) => {
        clearTimeout(timer);
        resolve([message.key.toString(), message.value.toString()]);
      },
    });
  });
  await consumer.disconnect();
  check('a record produced is consumed (kafkajs, auto-created topic, a group)',
    JSON.stringify(got) === JSON.stringify(['k', 'hello from npm']), JSON.stringify(got));
  let pid = node.pid;
  const temporary = node.dataDir;
  check('the node reports its data directory', fs.existsSync(path.join(temporary, '__cluster_metadata-0')), temporary);
  const code = await node.stop();
  check('stop() ends the node cleanly', code === 0 && (await gone(pid)), `exit code ${code}`);
  check('a temporary data directory is deleted at stop()', !fs.existsSync(temporary), temporary);
  check('stop() twice is harmless', (await node.stop()) === 0);

  node = await start({ properties: { 'num.partitions': 3 } });
  const admin = client(node).admin();
  await admin.connect();
  const p = client(node).producer({ allowAutoTopicCreation: true });
  await p.connect();
  await p.send({ topic: 'p3', messages: [{ value: 'x' }] });
  await p.disconnect();
  const meta = await admin.fetchTopicMetadata({ topics: ['p3'] });
  await admin.disconnect();
  const partitions = meta.topics[0].partitions.length;
  check('properties reach the broker (num.partitions=3)', partitions === 3, partitions);
  pid = node.pid;
  await node.stop();
  check('the node is gone after stop()', await gone(pid));

  const dataDir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'samsa-kept-'));
  node = await start({ dataDir });
  await node.stop();
  check('a dataDir given is kept', fs.existsSync(path.join(dataDir, '__cluster_metadata-0')), dataDir);
  fs.rmSync(dataDir, { recursive: true, force: true });

  // A node left running is stopped when its process exits.
  const [leftPid, leftDir] = execFileSync(process.execPath, ['-e',
    "require('samsa').start().then((n) => { console.log(n.pid, n.dataDir); process.exit(0); })"],
  { encoding: 'utf8' }).trim().split(' ');
  check('a node left running is stopped at process exit', await gone(Number(leftPid)), leftPid);
  check('... and deletes its data', !fs.existsSync(leftDir), leftDir);
  // ... and a forgotten one does not keep the event loop alive.
  // (The SIGTERM comes a moment after the node said it serves: the node must shut down
  // cleanly, deleting its data, even then.)
  const forgotten = spawnSync(process.execPath, ['-e',
    "require('samsa').start().then((n) => console.log(n.pid, n.dataDir))"], { encoding: 'utf8', timeout: 20000 });
  check('a forgotten node does not keep node running', forgotten.status === 0, forgotten.status ?? forgotten.signal);
  const [forgottenPid, forgottenDir] = forgotten.stdout.trim().split(' ');
  check('... and is stopped too', await gone(Number(forgottenPid)), forgottenPid);
  check('... and deletes its data', !fs.existsSync(forgottenDir), forgottenDir);

  try {
    await start({ properties: { 'no.such.key': 1 } });
    check('a bad property rejects start() with the node\'s message', false, 'started');
  } catch (e) {
    check('a bad property rejects start() with the node\'s message', e.message.includes('no.such.key'), e.message.slice(-200));
  }

  console.log(`npm package: ${failures.length === 0 ? 'all checks passed' : `FAILED: ${failures.join(', ')}`}`);
  process.exit(failures.length === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
