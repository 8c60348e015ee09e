"""Chat models behind one async protocol, with a response cache and cost accounting."""
