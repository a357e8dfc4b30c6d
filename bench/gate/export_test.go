package gate

// MinP exposes minP to the tests.
var MinP = minP
