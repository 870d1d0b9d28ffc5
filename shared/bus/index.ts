export * from './port.js';
export { PoisonMessageError, PartitionFencedError } from './errors.js';
export { applyOnce, applyOnceBatch } from './apply-once.js';
export { partitionFor } from './partitioner.js';
export {
  REDRIVEN_FROM_HEADER,
  deadLetterCounts,
  redriveDeadLetters,
  redriveGroup,
  redrivenMessage,
} from './redrive.js';
