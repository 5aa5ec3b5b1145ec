"""Media inputs (images, and the refusals for video and audio): where they may come from,
how large they may be, and how they become pixels. Nothing here knows an API family."""
