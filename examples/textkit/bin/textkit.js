#!/usr/bin/env node
'use strict';
// textkit <command> <text...>: prints the command's result for the text. Each command is a module
// src/commands/<command>.js exporting a function (text) => string.
const fs = require('node:fs');
const path = require('node:path');

const [command, ...words] = process.argv.slice(2);
const file = /^[a-z]+$/.test(command ?? '') ? path.join(__dirname, '..', 'src', 'commands', `${command}.js`) : '';
if (!file || !fs.existsSync(file)) {
  console.error(`textkit: unknown command ${JSON.stringify(command ?? '')}`);
  process.exit(2);
}
console.log(require(file)(words.join(' ')));
