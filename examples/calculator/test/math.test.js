'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { sum, average, clamp } = require('../src/math');

test('sum adds every value', () => {
  assert.strictEqual(sum([1, 2, 3, 4]), 10);
});

test('average is the arithmetic mean', () => {
  assert.strictEqual(average([2, 4, 6]), 4);
  assert.strictEqual(average([5]), 5);
});

test('average rejects an empty list', () => {
  assert.throws(() => average([]), RangeError);
});

test('clamp keeps a value within bounds', () => {
  assert.strictEqual(clamp(5, 0, 3), 3);
  assert.strictEqual(clamp(-1, 0, 3), 0);
  assert.strictEqual(clamp(2, 0, 3), 2);
});
