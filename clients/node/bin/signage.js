#!/usr/bin/env node
'use strict';
const { spawnSync } = require('node:child_process');
const { binaryPath } = require('../index.js');
const r = spawnSync(binaryPath(), process.argv.slice(2), { stdio: 'inherit' });
process.exit(r.status === null ? 1 : r.status);
