export * from './broadcast-errors.js';
export * from './fees.js';
export * from './job-table.js';
export * from './nonces.js';
export * from './rpc.js';
export * from './sender.js';
export * from './types.js';
