'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const util = require('node:util');
/*
 * Scenarios of the official RocketMQ 5.x Node.js SDK (rocketmq-client-nodejs) against one gRPC
 * endpoint, run concurrently in one process (each step has its own topic <prefix>-<step> and group
 * <prefix>-<step>-g), in the shape of compat/java-tests' GrpcScenarios: every observation is one
 * line "@@ <json>" on stdout, and each step ends with {"step":..,"ev":"done","ok":..,"error":..}.
 *
 * Usage: node scenarios.js <endpoint> <prefix> <step>...
 * Steps: simple, fifo, delay, tx, push, dlq, send (send only), recv (receive what another client
 * sent). Environment: SCENARIO_COUNT (3), SCENARIO_STEP_TIMEOUT_MS (60000), SCENARIO_LOG_DIR (the
 * SDK's log, rocketmq-client-nodejs.log; the temp folder by default).
 *
 * The SDK's sslEnabled defaults to false (plaintext), which the servers' permissive ports take.
 */
const {
  Producer,
  SimpleConsumer,
  PushConsumer,
  ConsumeResult,
  FilterExpression,
} = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const [endpoint, prefix, ...steps] = process.argv.slice(2);
const COUNT = Number(process.env.SCENARIO_COUNT || 3);
const STEP_TIMEOUT_MS = Number(process.env.SCENARIO_STEP_TIMEOUT_MS || 60000);
const INVISIBLE_MS = 10000; // the Java proxy's minimum for ReceiveMessage
const CHANGED_INVISIBLE_MS = 2000; // ChangeInvisibleDuration has no minimum
const AWAIT_MS = 5000;

/*
 * One log file for all clients: the SDK's default logger (egg-logger on ~/logs/rocketmq) is shared
 * by every client in the process and closed by the first that shuts down, after which the others'
 * log calls throw "log stream had been closed".
 */
const LOG_FILE = path.join(process.env.SCENARIO_LOG_DIR || os.tmpdir(), 'rocketmq-client-nodejs.log');
const logger = Object.fromEntries(
  ['info', 'warn', 'error', 'debug'].map((level) => [
    level,
    (...args) => fs.appendFileSync(LOG_FILE, `${new Date().toISOString()} ${level} ${util.format(...args)}\n`),
  ]),
);
const base = { endpoints: endpoint, namespace: '', requestTimeout: 10000, logger };

function emit(step, ev, fields = {}) {
  process.stdout.write(`@@ ${JSON.stringify({ step, ev, ...fields })}\n`);
}

const topic = (step) => `${prefix}-${step}`;
const group = (step) => `${prefix}-${step}-g`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const deadline = () => Date.now() + STEP_TIMEOUT_MS;

function received(step, v) {
  emit(step, 'received', {
    id: v.messageId,
    body: v.body.toString('utf8'),
    topic: v.topic,
    tag: v.tag ?? null,
    keys: v.keys.join(','),
    group: v.messageGroup ?? null,
    attempt: v.deliveryAttempt,
    deliveryTs: v.deliveryTimestamp ? v.deliveryTimestamp.getTime() : null,
    bornTs: v.bornTimestamp ? v.bornTimestamp.getTime() : null,
    now: Date.now(),
    props: Object.fromEntries(v.properties),
  });
}

async function producer(t, extra = {}) {
  const p = new Producer({ ...base, topics: [t], ...extra });
  await p.startup();
  return p;
}

async function simpleConsumer(step, t) {
  const c = new SimpleConsumer({
    ...base,
    consumerGroup: group(step),
    awaitDuration: AWAIT_MS,
    subscriptions: new Map([[t, FilterExpression.SUB_ALL]]),
  });
  await c.startup();
  return c;
}

async function send(step, p, options, transaction) {
  const body = options.body;
  const r = await p.send({ ...options, body: Buffer.from(body) }, transaction);
  emit(step, 'sent', { id: r.messageId, body });
  return r.messageId;
}

/** Receive until done() or the step's deadline, handing each message to onMessage. */
async function receiveUntil(c, done, onMessage) {
  const end = deadline();
  while (Date.now() < end && !done()) {
    for (const v of await c.receive(16, INVISIBLE_MS)) {
      await onMessage(v);
    }
  }
}

/** Receive and ack until n messages came (or the step's deadline). */
async function receiveAndAck(step, c, n) {
  let got = 0;
  await receiveUntil(
    c,
    () => got >= n,
    async (v) => {
      received(step, v);
      await c.ack(v);
      got++;
    },
  );
}

/**
 * Send with tag, keys and a property; receive; ack all but the last two: one is left to its
 * invisible duration, the other's is changed to 2 s; both come back and are acked then.
 */
async function simple(step) {
  const t = topic(step);
  const p = await producer(t);
  const c = await simpleConsumer(step, t);
  try {
    const ids = [];
    for (let i = 0; i < COUNT; i++) {
      ids.push(
        await send(step, p, {
          topic: t,
          body: `${step}-${i}`,
          tag: 'TagA',
          keys: [`key-${i}`, `k2-${i}`],
          properties: new Map([['color', `c${i}`]]),
        }),
      );
    }
    const kept = ids[ids.length - 1];
    const changed = ids[ids.length - 2];
    const acked = new Set();
    await receiveUntil(
      c,
      () => acked.has(kept) && acked.has(changed),
      async (v) => {
        received(step, v);
        if (v.messageId === kept && v.deliveryAttempt === 1) {
          emit(step, 'withheld', { id: v.messageId, now: Date.now() });
          return;
        }
        if (v.messageId === changed && v.deliveryAttempt === 1) {
          await c.changeInvisibleDuration(v, CHANGED_INVISIBLE_MS);
          emit(step, 'changed', { id: v.messageId, now: Date.now() });
          return;
        }
        await c.ack(v);
        acked.add(v.messageId);
        emit(step, 'acked', { id: v.messageId });
      },
    );
  } finally {
    await c.shutdown();
    await p.shutdown();
  }
}

/** One message group, sent in order, received and acked in the same order. */
async function fifo(step) {
  const t = topic(step);
  const n = COUNT * 2;
  const p = await producer(t);
  const c = await simpleConsumer(step, t);
  try {
    for (let i = 0; i < n; i++) {
      await send(step, p, { topic: t, body: `${step}-${i}`, tag: 'F', messageGroup: 'mg-1' });
    }
    await receiveAndAck(step, c, n);
  } finally {
    await c.shutdown();
    await p.shutdown();
  }
}

/** deliveryTimestamp three seconds ahead: not received before it. */
async function delay(step) {
  const t = topic(step);
  const p = await producer(t);
  const c = await simpleConsumer(step, t);
  try {
    const at = Date.now() + 3000;
    const body = `${step}-0`;
    const r = await p.send({ topic: t, body: Buffer.from(body), tag: 'D', deliveryTimestamp: new Date(at) });
    emit(step, 'sent', { id: r.messageId, body, deliverAt: at, now: Date.now() });
    await receiveAndAck(step, c, 1);
  } finally {
    await c.shutdown();
    await p.shutdown();
  }
}

/**
 * Three half messages: committed, rolled back, and left open for the check-back, whose checker
 * commits it (it answers by the message's key, as an application looks up its local transaction).
 */
async function tx(step) {
  const t = topic(step);
  const checker = {
    async check(v) {
      emit(step, 'checked', { id: v.messageId, body: v.body.toString('utf8') });
      return v.keys.includes('rollback') ? TransactionResolution.ROLLBACK : TransactionResolution.COMMIT;
    },
  };
  const p = await producer(t, { checker });
  const c = await simpleConsumer(step, t);
  try {
    for (const what of ['commit', 'rollback', 'check']) {
      const body = `${step}-${what}`;
      const transaction = p.beginTransaction();
      await send(step, p, { topic: t, body, tag: 'T', keys: [what] }, transaction);
      if (what === 'commit') await transaction.commit();
      else if (what === 'rollback') await transaction.rollback();
    }
    const bodies = new Set();
    await receiveUntil(
      c,
      () => bodies.has(`${step}-check`),
      async (v) => {
        received(step, v);
        await c.ack(v);
        bodies.add(v.body.toString('utf8'));
      },
    );
    // One more receive: a rolled-back message must not show up late either.
    for (const v of await c.receive(16, INVISIBLE_MS)) {
      received(step, v);
      await c.ack(v);
    }
  } finally {
    await c.shutdown();
    await p.shutdown();
  }
}

/**
 * A push consumer's shutdown first waits for its long poll in flight, which lasts the server's
 * long-polling timeout from the settings (20 s; the SDK's longPollingTimeout option is not applied
 * in 1.0.8): started, not awaited, as the process exits once every step is done.
 */
function leave(c) {
  c.shutdown().catch((e) => process.stderr.write(`push consumer shutdown: ${e}\n`));
}

async function pushConsumer(step, filter, consume) {
  const c = new PushConsumer({
    ...base,
    consumerGroup: group(step),
    subscriptions: new Map([[topic(step), filter]]),
    messageListener: { consume },
  });
  await c.startup();
  return c;
}

/** PushConsumer: each message fails once, then succeeds on its redelivery. */
async function push(step) {
  const t = topic(step);
  const seen = new Map();
  const c = await pushConsumer(step, new FilterExpression('P'), async (v) => {
    const n = (seen.get(v.messageId) || 0) + 1;
    seen.set(v.messageId, n);
    received(step, v);
    if (n === 1) {
      emit(step, 'failed', { id: v.messageId });
      return ConsumeResult.FAILURE;
    }
    emit(step, 'consumed', { id: v.messageId });
    return ConsumeResult.SUCCESS;
  });
  const p = await producer(t);
  try {
    for (let i = 0; i < COUNT; i++) {
      await send(step, p, { topic: t, body: `${step}-${i}`, tag: 'P' });
    }
    const end = deadline();
    while (Date.now() < end && [...seen.values()].filter((n) => n >= 2).length < COUNT) {
      await sleep(100);
    }
  } finally {
    await p.shutdown();
    leave(c);
  }
}

/**
 * PushConsumer of a group with retryMaxTimes 1 that fails every delivery: two deliveries, then the
 * message is in the group's %DLQ% topic (pytest reads it there with a remoting consumer).
 */
async function dlq(step) {
  const t = topic(step);
  let deliveries = 0;
  const c = await pushConsumer(step, FilterExpression.SUB_ALL, async (v) => {
    deliveries++;
    received(step, v);
    return ConsumeResult.FAILURE;
  });
  const p = await producer(t);
  try {
    await send(step, p, { topic: t, body: `${step}-0`, tag: 'Q' });
    const end = deadline();
    while (Date.now() < end && deliveries < 2) {
      await sleep(100);
    }
    await sleep(3000); // a third delivery would come now
  } finally {
    await p.shutdown();
    leave(c);
  }
}

/** Only send (tag, keys, property) to <prefix>-send: another client reads them. */
async function sendOnly(step) {
  const t = topic(step);
  const p = await producer(t);
  try {
    for (let i = 0; i < COUNT; i++) {
      await send(step, p, {
        topic: t,
        body: `${step}-${i}`,
        tag: 'X',
        keys: [`key-${i}`],
        properties: new Map([['color', `c${i}`]]),
      });
    }
  } finally {
    await p.shutdown();
  }
}

/** Receive and ack COUNT messages of <prefix>-recv (sent there by another client). */
async function recvOnly(step) {
  const t = topic(step);
  const c = await simpleConsumer(step, t);
  try {
    await receiveAndAck(step, c, COUNT);
  } finally {
    await c.shutdown();
  }
}

const STEPS = { simple, fifo, delay, tx, push, dlq, send: sendOnly, recv: recvOnly };

async function run(step) {
  emit(step, 'start', { now: Date.now() });
  let error = null;
  try {
    if (!STEPS[step]) throw new Error(`unknown step ${step}`);
    await STEPS[step](step);
  } catch (e) {
    error = String(e && e.stack ? e.stack : e);
    process.stderr.write(`${step}: ${error}\n`);
  }
  emit(step, 'done', { ok: error === null, error, now: Date.now() });
}

Promise.all(steps.map(run)).then(() => {
  emit('*', 'exit');
  process.exit(0); // the SDK's timers would keep the process alive
});
