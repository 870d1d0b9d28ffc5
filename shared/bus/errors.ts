import { CodedError } from '../errors/coded-error.js';

/** A message that can never be handled (malformed, wrong schema): it goes to the dead-letter topic at once. */
export class PoisonMessageError extends CodedError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('POISON_MESSAGE', message, options);
    this.name = 'PoisonMessageError';
  }
}

/** Another member took this partition (or the group was seeked): the work in hand must not be committed. */
export class PartitionFencedError extends CodedError {
  constructor(topic: string, partition: number) {
    super('PARTITION_FENCED', `partition ${topic}/${partition} is no longer owned by this consumer`);
    this.name = 'PartitionFencedError';
  }
}
