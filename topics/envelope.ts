import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { BusMessage, OutgoingMessage, TopicSpec } from '../shared/bus/port.js';
import { PoisonMessageError } from '../shared/bus/errors.js';

/**
 * Every message on every topic is this envelope (DESIGN §3). `id` is the dedupe key consumers record with
 * their effects, so producers that may resend derive it deterministically from what they send.
 */
export interface Envelope<P> {
  id: string;
  type: string;
  version: number;
  /** Unix seconds: the block timestamp for chain facts, the receipt time for commands. */
  occurredAt: number;
  /** Who produced it: service name and instance. */
  source: string;
  payload: P;
}

export interface TopicDefinition<P> {
  name: string;
  /** Envelope type and schema version this code writes and reads. */
  type: string;
  version: number;
  /** What the message key is, and why (per-key order holds only within one key). */
  keyDoc: string;
  key(payload: P): string;
  payload: z.ZodType<P, unknown>;
  /**
   * Headers derived from the payload, beside `type` and `version`: what a consumer may read to pass over a
   * message it never uses without parsing it (the payload stays the truth; its schema is checked by encode).
   */
  headers?(payload: P): Record<string, string>;
  partitions?: number;
  /** null: kept for ever, so projections can be rebuilt by replay. */
  retentionMs: number | null;
  /** TopicSpec.fixedPartitions: never grown once created (its consumers rely on per-key order over all of it). */
  fixedPartitions?: true;
}

export function defineTopic<P>(definition: TopicDefinition<P>): TopicDefinition<P> {
  return definition;
}

export const envelopeShape = z.object({
  id: z.string().min(1).max(200),
  type: z.string().min(1),
  version: z.number().int().positive(),
  occurredAt: z.number().int().nonnegative(),
  source: z.string().min(1),
  payload: z.unknown(),
});

export function envelope<P>(
  topic: TopicDefinition<P>,
  payload: P,
  fields: { occurredAt: number; source: string; id?: string },
): Envelope<P> {
  return {
    id: fields.id ?? randomUUID(),
    type: topic.type,
    version: topic.version,
    occurredAt: fields.occurredAt,
    source: fields.source,
    payload,
  };
}

/** Validates an outgoing envelope (a producer bug must not reach the topic) and turns it into a message. */
export function encode<P>(topic: TopicDefinition<P>, value: Envelope<P>): OutgoingMessage {
  const payload = topic.payload.parse(value.payload);
  return {
    key: topic.key(payload),
    value: JSON.stringify({ ...value, payload }),
    headers: { ...topic.headers?.(payload), type: value.type, version: String(value.version) },
  };
}

/**
 * Parses a message at the consumer boundary. Anything that is not a valid envelope of this topic's type and
 * version is a poison message (dead-letter topic), never silently dropped.
 */
export function decode<P>(topic: TopicDefinition<P>, message: BusMessage): Envelope<P> {
  return decodePayload(topic, decodeEnvelope(topic, message));
}

/** Validates the payload of an envelope decodeEnvelope returned (the message is not parsed again). */
export function decodePayload<P>(topic: TopicDefinition<P>, outer: Envelope<unknown>): Envelope<P> {
  const payload = topic.payload.safeParse(outer.payload);
  if (!payload.success) {
    throw new PoisonMessageError(`${topic.name}: invalid payload: ${z.prettifyError(payload.error)}`);
  }
  return { ...outer, payload: payload.data };
}

/**
 * The envelope of a message of this topic, its payload not validated yet: for a consumer that looks at one
 * field of the payload to decide whether it uses the message at all, and validates what it uses with decode.
 */
export function decodeEnvelope(topic: TopicDefinition<unknown>, message: BusMessage): Envelope<unknown> {
  let json: unknown;
  try {
    json = JSON.parse(message.value);
  } catch {
    throw new PoisonMessageError(`${topic.name}: message is not JSON`);
  }
  let outer = plainEnvelope(json);
  if (outer === undefined) {
    const parsed = envelopeShape.safeParse(json);
    if (!parsed.success)
      throw new PoisonMessageError(`${topic.name}: not an envelope: ${z.prettifyError(parsed.error)}`);
    outer = parsed.data;
  }
  if (outer.type !== topic.type || outer.version !== topic.version) {
    throw new PoisonMessageError(
      `${topic.name}: unsupported envelope ${outer.type} v${outer.version} (expected ${topic.type} v${topic.version})`,
    );
  }
  return outer;
}

/**
 * The envelope when its fields are plainly what envelopeShape asks (every message of a healthy topic), as
 * envelopeShape would return it, without zod's walk: every consumer decodes every message. Undefined
 * otherwise, and envelopeShape then decides (and says why).
 */
export function plainEnvelope(json: unknown): Envelope<unknown> | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const { id, type, version, occurredAt, source, payload } = json as Record<string, unknown>;
  if (typeof id !== 'string' || id.length < 1 || id.length > 200) return undefined;
  if (typeof type !== 'string' || type.length < 1) return undefined;
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1) return undefined;
  if (typeof occurredAt !== 'number' || !Number.isSafeInteger(occurredAt) || occurredAt < 0) return undefined;
  if (typeof source !== 'string' || source.length < 1 || !('payload' in json)) return undefined;
  return { id, type, version, occurredAt, source, payload };
}

export function topicSpec(topic: TopicDefinition<unknown>, defaultPartitions: number): TopicSpec {
  return {
    name: topic.name,
    partitions: topic.partitions ?? defaultPartitions,
    retentionMs: topic.retentionMs,
    ...(topic.fixedPartitions && { fixedPartitions: true }),
  };
}
