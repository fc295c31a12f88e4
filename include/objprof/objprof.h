// Umbrella header: everything a runtime needs to embed objprof.
#pragma once

#include "objprof/access_bitmap.h"
#include "objprof/barrier.h"
#include "objprof/barrier_descriptor.h"
#include "objprof/heap_space.h"
#include "objprof/leak_group.h"
#include "objprof/heap_walk.h"
#include "objprof/path_search.h"
#include "objprof/profiler.h"
#include "objprof/result.h"
#include "objprof/root_path.h"
#include "objprof/survivor_oracle.h"
#include "objprof/thread_state.h"
#include "objprof/trace_format.h"
#include "objprof/trace_reader.h"
#include "objprof/trace_sink.h"
#include "objprof/trace_writer.h"
