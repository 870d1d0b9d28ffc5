import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../shared/net/free-port.js';

/**
 * A real Apache Kafka broker without Docker: the broker's jars come from Maven Central through the small pom
 * beside this file (cached in ~/.cache/otmoic), KRaft storage is formatted with kafka.tools.StorageTool and
 * one combined broker+controller runs on loopback with a small heap.
 */
export const KAFKA_VERSION = '3.9.1';
const POM = path.join(import.meta.dirname, 'kafka', 'pom.xml');
const run = promisify(execFile);

export function kafkaCacheDir(): string {
  return (
    process.env.OTMOIC_KAFKA_HOME ?? path.join(os.homedir(), '.cache', 'otmoic', `kafka-${KAFKA_VERSION}`)
  );
}

/** undefined when java and (for a first fetch) mvn are usable, else why not. */
export async function kafkaProblem(): Promise<string | undefined> {
  if (!(await commandWorks('java', ['-version']))) return 'java is not installed';
  if (!(await jarsPresent()) && !(await commandWorks('mvn', ['-v'])))
    return `mvn is not installed and the Kafka ${KAFKA_VERSION} jars are not cached in ${kafkaCacheDir()}`;
  return undefined;
}

async function commandWorks(command: string, args: string[]): Promise<boolean> {
  try {
    await run(command, args, { timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

async function jarsPresent(): Promise<boolean> {
  const libs = path.join(kafkaCacheDir(), 'libs');
  return existsSync(libs) && (await readdir(libs)).some((f) => f.startsWith('kafka_2.13-'));
}

/** Fetches the broker's jars once; later calls find them in the cache. */
export async function ensureKafkaJars(): Promise<string> {
  const libs = path.join(kafkaCacheDir(), 'libs');
  if (await jarsPresent()) return libs;
  // Into a scratch directory first, so an interrupted fetch never leaves a half-filled cache.
  const scratch = `${libs}.partial-${process.pid}`;
  await mkdir(scratch, { recursive: true });
  await run('mvn', ['-q', '-B', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${scratch}`], {
    timeout: 15 * 60_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  await rm(libs, { recursive: true, force: true });
  await rename(scratch, libs);
  return libs;
}

export interface KafkaBroker {
  brokers: string[];
  port: number;
  dataDir: string;
  /** Stops the broker process (SIGTERM, then SIGKILL after `graceMs`); storage is kept for start(). */
  stop(graceMs?: number): Promise<void>;
  /** Stops it and removes a temporary data directory. */
  close(): Promise<void>;
  /** Starts it again on the same ports and storage. */
  start(): Promise<void>;
  /** The broker's recent output, for error messages. */
  output(): string;
}

export interface KafkaBrokerOptions {
  /** Storage and logs; a temporary directory when not given (removed by close()). */
  dataDir?: string;
  port?: number;
  heapMb?: number;
  /**
   * auto.create.topics.enable: off (as our brokers are configured) unless set. On: a broker that creates a
   * topic any client's metadata request names, with the broker's defaults (num.partitions 1).
   */
  autoCreateTopics?: boolean;
  /**
   * The port the broker tells clients to connect to (its metadata), when not its own: a proxy in front of it
   * (kafka-proxy.ts) that every connection of a client then goes through.
   */
  advertisedPort?: number;
}

/** Formats storage if new and starts a single-node KRaft broker on 127.0.0.1; resolves once it answers. */
export async function startKafka(options: KafkaBrokerOptions = {}): Promise<KafkaBroker> {
  const libs = await ensureKafkaJars();
  const temporary = !options.dataDir;
  const dataDir = options.dataDir ?? path.join(os.tmpdir(), `otmoic-kafka-${randomBytes(4).toString('hex')}`);
  await mkdir(dataDir, { recursive: true });
  const port = options.port ?? (await freePort());
  const controllerPort = await freePort();
  const classpath = `${libs}/*`;
  const properties = path.join(dataDir, 'server.properties');
  const logDir = path.join(dataDir, 'logs');
  await writeFile(
    properties,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${options.advertisedPort ?? port}`,
      'controller.listener.names=CONTROLLER',
      'inter.broker.listener.name=PLAINTEXT',
      'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      `log.dirs=${path.join(dataDir, 'data')}`,
      'num.partitions=1',
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=4',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'group.initial.rebalance.delay.ms=0',
      // Topics are created by the services with their partitions and retention (topics/).
      `auto.create.topics.enable=${options.autoCreateTopics === true}`,
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(dataDir, 'log4j.properties'),
    [
      'log4j.rootLogger=WARN, file',
      'log4j.appender.file=org.apache.log4j.FileAppender',
      `log4j.appender.file.File=${path.join(logDir, 'server.log')}`,
      'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
      'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
      'log4j.logger.kafka.server.KafkaRaftServer=INFO',
      '',
    ].join('\n'),
  );
  await mkdir(logDir, { recursive: true });
  const jvm = [
    `-Xmx${options.heapMb ?? 512}m`,
    `-Xms${Math.min(options.heapMb ?? 512, 256)}m`,
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    `-Dlog4j.configuration=file:${path.join(dataDir, 'log4j.properties')}`,
    `-Dkafka.logs.dir=${logDir}`,
    '-cp',
    classpath,
  ];
  if (!existsSync(path.join(dataDir, 'data', 'meta.properties'))) {
    const clusterId = randomBytes(16).toString('base64url');
    await run(
      'java',
      // `--cluster-id=<id>` in one argument: a base64url id may start with '-' (1 in 32), which the tool's
      // argument parser would take for an option.
      [
        ...jvm,
        'kafka.tools.StorageTool',
        'format',
        `--cluster-id=${clusterId}`,
        '-c',
        properties,
        '--ignore-formatted',
      ],
      { timeout: 120_000 },
    );
  }

  let child: ChildProcess | undefined;
  let output = '';
  const start = async () => {
    output = '';
    const proc = spawn('java', [...jvm, 'kafka.Kafka', properties], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000));
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    let exited = false;
    proc.on('exit', () => (exited = true));
    const deadline = Date.now() + 120_000;
    while (!(await answers(port))) {
      if (exited) throw new Error(`the Kafka broker exited while starting:\n${output}`);
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`the Kafka broker did not answer on ${port} within 120 s:\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  await start();

  const broker: KafkaBroker = {
    brokers: [`127.0.0.1:${port}`],
    port,
    dataDir,
    output: () => output,
    start,
    async stop(graceMs = 20_000) {
      const proc = child;
      child = undefined;
      if (proc && proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((resolve) => proc.once('exit', resolve));
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
    },
    async close() {
      await broker.stop();
      if (temporary) await rm(dataDir, { recursive: true, force: true });
    },
  };
  return broker;
}

/** True once the broker's listener accepts connections and answers an ApiVersions request. */
async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2_000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => {
      // ApiVersions v0 request: size, api key 18, version 0, correlation id 1, client id "probe".
      const clientId = Buffer.from('probe');
      const body = Buffer.alloc(10 + clientId.length);
      body.writeInt16BE(18, 0);
      body.writeInt16BE(0, 2);
      body.writeInt32BE(1, 4);
      body.writeInt16BE(clientId.length, 8);
      clientId.copy(body, 10);
      const size = Buffer.alloc(4);
      size.writeInt32BE(body.length, 0);
      socket.write(Buffer.concat([size, body]));
    });
    socket.on('data', (data) => done(data.length >= 8));
  });
}
