// The report as CSV (RFC 4180: comma separated, a header line, fields with commas or quotes
// quoted) for spreadsheets and scripts: one table per call. The "objects" table streams every
// object's chain (one line each) straight to a file, for traces of any size.
#pragma once

#include "objprof/analysis/report.h"
#include "objprof/result.h"

#include <cstdio>
#include <string>

namespace objprof::analysis {

enum class CsvTable : std::uint8_t { kLeaks, kSites, kTypes, kThreads, kSurvival, kCohorts, kSizes, kGcs, kDiff, kObjects };

// "leaks", "sites", ... "objects". Errors: an unknown name (the message lists the names).
Result<CsvTable> parse_csv_table(const std::string& name);
const char* csv_table_name(CsvTable t) noexcept;

// Every table except kObjects. Errors: kDiff without a diff in the report.
Result<std::string> render_csv(const Report& report, CsvTable table);

// id,site,type,thread,size,birth_epoch,birth_bytes,death_epoch,lifetime_gcs,lifetime_bytes,
// last_use_epoch,idle_epochs,access_epochs,accessed,placements ("epoch@0xaddr;...").
Status write_objects_csv(const TraceAnalysis& a, const ObjectFilter& filter, std::FILE* out);

}  // namespace objprof::analysis
