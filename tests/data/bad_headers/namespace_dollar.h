namespace a ${
