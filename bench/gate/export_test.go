package gate

// MinP exposes minP to the tests.
var MinP = minP

// Holm exposes holm to the tests.
var Holm = holm
