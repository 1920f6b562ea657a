"""Address spaces: the 51-bit PA codec, allocators, and the channel interleave."""
