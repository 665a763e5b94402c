"""Generated gRPC stubs of proto/tuned/v1/tuner.proto (tuner_pb2, tuner_pb2_grpc), written at build time by setup.py."""
