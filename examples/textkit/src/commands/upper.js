'use strict';
/** `textkit upper <text>`: the text in capitals. */
module.exports = (text) => text.toUpperCase();
