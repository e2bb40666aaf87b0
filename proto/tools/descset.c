/*
 * descset: write gRPC's compiled-in Envoy descriptors as a FileDescriptorSet.
 *
 * protoc needs the definitions of everything Arion's own .proto files import
 * (envoy/config/core/v3/protocol.proto, ...). Debian ships no Envoy .proto
 * files, but libgrpc.so carries each one's serialized FileDescriptorProto for
 * upb's reflection. Writing those out gives protoc exactly the definitions
 * that the running code was built from, so generated code and libgrpc's
 * tables can never disagree.
 *
 * Usage: descset OUT.pb
 */
#include <stdint.h>
#include <stdio.h>

#include "upb/def.h"

extern const _upb_DefPool_Init *const arn_proto_grpc_defs[];

static void put_varint(FILE *f, uint64_t v)
{
	while (v >= 0x80) {
		fputc((int)(v & 0x7f) | 0x80, f);
		v >>= 7;
	}
	fputc((int)v, f);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.pb\n", argv[0]);
		return 2;
	}
	FILE *f = fopen(argv[1], "wb");
	if (f == NULL) {
		perror(argv[1]);
		return 1;
	}
	for (const _upb_DefPool_Init *const *d = arn_proto_grpc_defs; *d != NULL; d++) {
		/* FileDescriptorSet.file = 1, length-delimited */
		fputc(0x0a, f);
		put_varint(f, (*d)->descriptor.size);
		fwrite((*d)->descriptor.data, 1, (*d)->descriptor.size, f);
	}
	if (fclose(f) != 0) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
