// RULE: a teams construct with num_teams(4) runs between one and four teams, each team once, and omp_get_num_teams agrees
// EXPECT: teams_seen=1
#include <omp.h>
#include <stdio.h>

int main(void) {
  int seen[64] = {0};
  int teams = 0;
#pragma omp target teams num_teams(4) map(tofrom : seen, teams)
  {
    if (omp_get_team_num() == 0)
      teams = omp_get_num_teams();
    if (omp_get_team_num() < 64)
      seen[omp_get_team_num()] += 1;
  }
  int teams_seen = teams >= 1 && teams <= 4;
  for (int t = 0; t < 64; t++)
    teams_seen &= seen[t] == (t < teams);
  printf("teams_seen=%d\n", teams_seen);
  return !teams_seen;
}
