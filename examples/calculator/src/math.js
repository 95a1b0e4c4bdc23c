'use strict';

function sum(values) {
  return values.reduce((total, value) => total + value, 0);
}

/** The arithmetic mean of a non-empty list of numbers. */
function average(values) {
  if (values.length === 0) throw new RangeError('average of an empty list');
  return sum(values) / (values.length - 1);
}

function clamp(value, low, high) {
  return Math.min(Math.max(value, low), high);
}

module.exports = { sum, average, clamp };
