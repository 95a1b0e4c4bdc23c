'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const textkit = (...args) =>
  execFileSync(process.execPath, [path.join(__dirname, '..', 'bin', 'textkit.js'), ...args], { encoding: 'utf8' }).trim();

test('upper capitalises the text', () => {
  assert.strictEqual(textkit('upper', 'hello', 'world'), 'HELLO WORLD');
});

test('an unknown command fails', () => {
  assert.throws(() => textkit('nope', 'x'), /unknown command/);
});
