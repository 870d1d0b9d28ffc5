#!/usr/bin/env node
// `npm start` runs every service whose configuration sections are present, in one process (embedded profile
// unless DATABASE_URL / KAFKA_BROKERS / MONGO_HOST say otherwise); `npm run start-<name>` runs one.
import { services } from '../services/index.js';
import { runServices } from '../shared/runtime/runner.js';

await runServices(services, { names: process.argv.slice(2) });
