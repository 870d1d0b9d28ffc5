export * from './port.js';
export { PoisonMessageError, PartitionFencedError } from './errors.js';
export { applyOnce, applyOnceBatch } from './apply-once.js';
export { partitionFor } from './partitioner.js';
