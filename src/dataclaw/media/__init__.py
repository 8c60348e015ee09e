"""Video decode, seek and sampling (PyAV); clip, freeze-frame and still writers."""
